"""Probe: one tensor captured by two markers with an in-place change between, inside a marked outer call."""
import torch


def body(x):
    h = x * 2  # trace: h_first
    h.data.mul_(0)
    g = h  # trace: h_second
    return g + 1


x = torch.ones(3)
out = body(x)  # trace: out
print(out.tolist())
