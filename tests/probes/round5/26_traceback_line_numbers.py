"""Probe: an uncaught error raised two calls below a marked line: python's traceback (file:line) must be shown."""
import torch


def inner(t):
    return t @ torch.ones(5)


def outer(t):
    y = inner(t)  # trace: y
    return y


outer(torch.ones(2))
