"""Probe: a marked line inside a generator body, the generator consumed lazily and only partly."""
import torch


def gen(n):
    for i in range(n):
        y = torch.full((2,), float(i))  # trace: gen_y
        yield y * 2


g = gen(5)
print([t.tolist() for t, _ in zip(g, range(3))])
print(next(g).tolist())
