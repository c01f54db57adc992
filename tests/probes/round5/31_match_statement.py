"""Probe: markers in match/case bodies and on a case line."""
import torch

cmd = ("scale", 3)
match cmd:
    case ("scale", k):  # trace: k
        y = torch.ones(2) * k  # trace: y
    case _:
        y = None
print(y.tolist())
