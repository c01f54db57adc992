"""Probe: a marker on a lambda definition line (no other comment), and a lambda called in a marked line."""
import torch

f = lambda t: t * 2  # trace: f
y = (lambda t: t + 1)(torch.ones(2))  # trace: y
print(f(torch.ones(1)).tolist(), y.tolist())
