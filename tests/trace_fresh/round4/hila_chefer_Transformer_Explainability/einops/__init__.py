"""A minimal stand-in for einops (ours, not upstream; the project's environment has no einops): ``rearrange`` for
patterns of plain and parenthesised axes, and ``repeat`` for a new leading axis. Enough for vit_pytorch/vit.py; the
real package (pip install einops) gives the same results."""
import re

import torch


def _groups(side):
    return [g.split() if g.startswith("(") is False else g[1:-1].split() for g in re.findall(r"\([^)]*\)|\S+", side)]


def rearrange(tensor, pattern, **sizes):
    left, right = (_groups(s) for s in pattern.split("->"))
    known = dict(sizes)
    for group, size in zip(left, tensor.shape):
        unknown = [a for a in group if a not in known]
        product = 1
        for a in group:
            product *= known.get(a, 1)
        if unknown:
            known[unknown[0]] = size // product
    axes = [a for group in left for a in group]
    moved = tensor.reshape([known[a] for a in axes]).permute([axes.index(a) for group in right for a in group])
    shape = []
    for group in right:
        size = 1
        for a in group:
            size *= known[a]
        shape.append(size)
    return moved.reshape(shape)


def repeat(tensor, pattern, **sizes):
    left, right = (s.split() for s in pattern.split("->"))
    assert left[0] == "..." and right[1:] == left, pattern  # '... d -> b ... d': a new leading axis
    return tensor.unsqueeze(0).expand(sizes[right[0]], *tensor.shape)
