"""Probe: a marker on a decorator line (the decorated function is what the statement assigns)."""
import functools
import torch


@functools.lru_cache(maxsize=None)  # trace: cached
def cached(n):
    return n * 2


w = torch.ones(2) * cached(3)  # trace: w
print(cached(3), cached.cache_info().hits, w.tolist())
