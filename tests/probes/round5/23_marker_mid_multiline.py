"""Probe: a marker on the middle line of a multi-line statement."""
import torch

y = torch.cat(
    [torch.ones(2),  # trace: y
     torch.zeros(2)],
)
print(y.tolist())
