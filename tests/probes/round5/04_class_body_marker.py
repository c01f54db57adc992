"""Probe: a marked statement in a class body, with a class-scope comprehension after it."""
import torch


class Config:
    base = torch.arange(3.0)  # trace: base
    doubled = [v * 2 for v in range(3)]
    total = float(base.sum())


print(Config.base.tolist(), Config.doubled, Config.total, sorted(k for k in vars(Config) if not k.startswith("__")))
