"""Probe: recursion close to the recursion limit through a marked line (python: no RecursionError)."""
import sys
import torch

sys.setrecursionlimit(400)


def down(n):
    if n == 0:
        return torch.zeros(1)
    y = down(n - 1) + 1  # trace: y
    return y


print(down(370).item())
