"""Probe: a marked line in finally, and a return in finally overriding an exception."""
import torch


def f():
    try:
        raise ValueError("swallowed")
    finally:
        y = torch.ones(2)  # trace: y
        return y  # noqa: B012


print(f().tolist())
