"""A minimal stand-in for einops (ours, not upstream; the project's environment has no einops): `rearrange`, `repeat`
and `reduce` for patterns of plain axes, parenthesised groups, `()` (an axis of size 1) and `...` (the axes a pattern
does not name), and `einsum(*tensors, pattern)` with axis names of several letters.
Enough for the upstream code the fresh rounds and the corpus trace (tests/stubs/README.md); the real package
(pip install einops) gives the same results on these patterns."""
import re

import torch


def _named(pattern, tensor):
    """``pattern`` with ``...`` replaced by names of its own for the axes the left side does not name."""
    if "..." not in pattern:
        return pattern
    left = pattern.split("->")[0]
    named = len(re.findall(r"\([^)]*\)|\S+", left)) - 1
    return pattern.replace("...", " ".join(f"_axis{i}" for i in range(tensor.dim() - named)))


def _groups(side):
    return [g[1:-1].split() if g.startswith("(") else [g] for g in re.findall(r"\([^)]*\)|\S+", side)]


def _sides(tensor, pattern):
    return [_groups(side) for side in _named(pattern, tensor).split("->")]


def _bind(tensor, left, sizes, right=()):
    """Sizes of every axis on the left side, the unknown one of a group inferred from the tensor's shape; an axis
    written as a number (`d -> b 1 d`) has that size."""
    known = {a: int(a) for group in [*left, *right] for a in group if a.isdigit()}
    known.update(sizes)
    for group, size in zip(left, tensor.shape):
        unknown = [a for a in group if a not in known]
        product = 1
        for a in group:
            product *= known.get(a, 1)
        if unknown:
            known[unknown[0]] = size // product
    return known


def _squeeze_units(tensor, left):
    """The tensor and the left side without its axes written as a number (`1 1 d -> b 1 d`): those are of that size
    and not named, so they are dropped before the axes are moved."""
    kept = [i for i, group in enumerate(left) if not (len(group) == 1 and group[0].isdigit())]
    if len(kept) == len(left):
        return tensor, left
    return tensor.reshape([tensor.shape[i] for i in kept]), [left[i] for i in kept]


def _compose(tensor, right, known):
    shape = []
    for group in right:
        size = 1
        for a in group:
            size *= known[a]
        shape.append(size)
    return tensor.reshape(shape)


def rearrange(tensor, pattern, **sizes):
    left, right = _sides(tensor, pattern)
    tensor, left = _squeeze_units(tensor, left)
    known = _bind(tensor, left, sizes, right)
    axes = [a for group in left for a in group]
    # an axis of size 1 written on the right only (`q k h -> 1 h q k`) is made by the reshape, not moved
    moved = tensor.reshape([known[a] for a in axes]).permute([axes.index(a) for group in right for a in group if a in axes])
    return _compose(moved, right, known)


def repeat(tensor, pattern, **sizes):
    left, right = _sides(tensor, pattern)
    tensor, left = _squeeze_units(tensor, left)
    known = _bind(tensor, left, sizes, right)
    axes = [a for group in left for a in group]
    kept = [a for group in right for a in group if a in axes]
    moved = tensor.reshape([known[a] for a in axes]).permute([axes.index(a) for a in kept])
    right_axes = [a for group in right for a in group]
    view = [known[a] if a in axes else 1 for a in right_axes]
    expanded = moved.reshape(view).expand([known[a] for a in right_axes])
    return _compose(expanded, right, known)


def reduce(tensor, pattern, reduction, **sizes):
    left, right = _sides(tensor, pattern)
    tensor, left = _squeeze_units(tensor, left)
    known = _bind(tensor, left, sizes, right)
    axes = [a for group in left for a in group]
    kept = {a for group in right for a in group}
    flat = tensor.reshape([known[a] for a in axes])
    gone = [i for i, a in enumerate(axes) if a not in kept]
    reduced = getattr(torch, reduction)(flat, dim=gone) if gone else flat
    rest = [a for a in axes if a in kept]
    moved = reduced.permute([rest.index(a) for group in right for a in group])
    return _compose(moved, right, known)


def einsum(*tensors_and_pattern):
    """einops' einsum: the tensors, then a pattern whose axis names may have several letters; each name becomes one
    letter of a torch.einsum equation."""
    *tensors, pattern = tensors_and_pattern
    letters = {}

    def side(text):
        return "".join(token if token == "..." else letters.setdefault(token, chr(ord("a") + len(letters)))
                       for token in re.findall(r"\.\.\.|\w+", text))

    inputs, output = pattern.split("->")
    return torch.einsum(",".join(side(part) for part in inputs.split(",")) + "->" + side(output), *tensors)
