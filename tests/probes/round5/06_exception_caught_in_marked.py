"""Probe: a marked statement that raises, caught by the script; the script goes on and exits 0."""
import torch

x = torch.ones(2)
try:
    y = x @ torch.ones(3)  # trace: y
except RuntimeError as err:
    print("caught", type(err).__name__)
z = x + 1  # trace: z
print("z", z.tolist())
