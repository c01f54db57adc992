"""Probe: a marker on a line that defines a lambda, and a marked line calling it."""
import torch

f = lambda t: t * 2  # trace: f  # noqa: E731
y = f(torch.ones(2))  # trace: y
print(y.tolist(), f.__name__)
