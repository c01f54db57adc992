"""Probe: warnings.warn inside a marked line: python prints file:line of the caller to stderr."""
import warnings
import torch


def noisy(t):
    warnings.warn("careful", UserWarning, stacklevel=2)
    return t


y = noisy(torch.ones(2))  # trace: y
print("ok")
