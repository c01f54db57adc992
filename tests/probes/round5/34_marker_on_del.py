"""Probe: a marker on a `del` statement and on an augmented assignment."""
import torch

x = torch.ones(2)
x += 5  # trace: x
tmp = torch.zeros(1)
del tmp  # trace: gone
print(x.tolist(), "tmp" in globals())
