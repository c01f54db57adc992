"""Probe: a marked statement in a closure that rebinds a nonlocal and reads a cell variable."""
import torch


def make():
    total = torch.zeros(2)
    scale = 3.0

    def add(x):
        nonlocal total
        total = total + x * scale  # trace: total
        return total

    return add


add = make()
add(torch.ones(2))
print(add(torch.ones(2)).tolist(), add.__code__.co_freevars)
