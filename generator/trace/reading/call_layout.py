"""A marked line's module calls read in the layout its step was read in: in sequence-first code the step's captured
(T, B, C) value is permuted into the catalogue's (B, T, C) (reading/verify.py), and a tensor one of the line's calls
gave (the sublayer output of a residual sum) is compared with the captured steps only after the same permutation."""

from __future__ import annotations

import itertools

import torch


# the order of a step read from a (B, H', W', X) grid of tokens as (B, H'·W', X): three axes for a 4-D value (no
# permutation of one has three), its grid axes flattened row by row
GRID_FLATTENED = (0, 1, 2)


def catalogue_order(raw: torch.Tensor | None, canonical: torch.Tensor | None) -> tuple[int, ...] | None:
    """The axis order that reads a page's captured value ``raw`` as ``canonical`` (sequence-first (T, B, C) read as
    (B, T, C)); None where they are alike, or no reordering of the axes alone gives it."""
    if raw is None or canonical is None or raw.shape == canonical.shape:
        return None
    if raw.dim() == 4 and canonical.dim() == 3 and torch.equal(raw.flatten(1, 2), canonical.to(raw.dtype)):
        return GRID_FLATTENED  # tokens kept as a grid, read flattened (token_grid.py)
    if raw.dim() != canonical.dim() or raw.dim() > 4:
        return None
    for order in itertools.permutations(range(raw.dim())):
        if (tuple(raw.shape[i] for i in order) == tuple(canonical.shape)
                and torch.equal(raw.permute(order), canonical.to(raw.dtype))):
            return order
    return None


def in_order(tensor: torch.Tensor, order: tuple[int, ...] | None) -> torch.Tensor:
    """A module call's tensor, of the page's captured layout, in the layout the checks read (``catalogue_order``): a
    tensor of the step's rank permuted as the step was; a (T, B, C) stream a sequence-first head step's line read
    (its q (T, B, h, hs) read as (B, h, T, hs)) as (B, T, C)."""
    if order is None:
        return tensor
    if tensor.dim() == len(order):
        return tensor.permute(order).contiguous()
    if tensor.dim() == 4 and order == GRID_FLATTENED:  # a call on the grid (B, H', W', X): its tokens row by row
        return tensor.flatten(1, 2)
    if tensor.dim() == 3 and len(order) == 4 and order[0] > order[2]:  # the batch after the positions: sequence-first
        return tensor.transpose(0, 1).contiguous()
    return tensor
