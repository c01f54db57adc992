"""A minimal stand-in for einops (ours, not upstream; the project's environment has no einops): `rearrange` for
patterns of plain axes, parenthesised groups and a leading `...`, and `einsum(*tensors, pattern)` with axis names of
several letters and `...`, handed to torch.einsum. Enough for the patterns of cs336_basics/ (Linear_class, Rope_class,
Dot_Product_Attention, SwiGLU); the real package (pip install einops) gives the same results on these patterns."""
import re

import torch


def _groups(side):
    return [g[1:-1].split() if g.startswith("(") else [g] for g in re.findall(r"\([^)]*\)|\.\.\.|[^\s()]+", side)]


def rearrange(tensor, pattern, **sizes):
    left, right = (_groups(s) for s in pattern.split("->"))
    if ["..."] in left:
        lead = tensor.dim() - (len(left) - 1)
        names = [f"_lead{i}" for i in range(lead)]
        left = sum(([[n] for n in names] if g == ["..."] else [g] for g in left), [])
        right = sum(([[n] for n in names] if g == ["..."] else [g] for g in right), [])
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


def einsum(*tensors_and_pattern):
    *tensors, pattern = tensors_and_pattern
    letters = {}

    def side(text):
        out = ""
        for token in re.findall(r"\.\.\.|\w+", text):
            if token == "...":
                out += "..."
            else:
                out += letters.setdefault(token, "abcdefghijklmnopqrstuvwxyz"[len(letters)])
        return out

    inputs, output = pattern.split("->")
    equation = ",".join(side(part) for part in inputs.split(",")) + "->" + side(output)
    return torch.einsum(equation, *tensors)
