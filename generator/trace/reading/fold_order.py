"""The order in which a script folds its heads into the batch axis, read jointly from the run (issue 40, point 3).

Code that runs attention with ``torch.bmm`` folds the heads into the batch axis, (B·h, T, hs). Two orders give that
shape: batch-major, row item·h + head (``x.view(B, T, h, hs).transpose(1, 2).reshape(B * h, T, hs)``, as
``nn.MultiheadAttention`` and d2l do), and head-major, row head·B + item (``x.view(B, T, h, hs).permute(2, 0, 1, 3)
.reshape(h * B, T, hs)``). The shape cannot tell them apart; read the wrong way, a correct head split no longer
re-joins to its projection, and every step after it (the scores of another attention split the other way, the heads
merged back) reads as a form no check knows. The values tell where a folded per-head step and the whole tensor it was
split from are both captured (#12's heads and #7's queries, (B, T, C) or (B, T, h, hs)): ``heads_major`` finds the
order once per run from every such pair, and run_layout.py reads every folded step in it; the overview says what the
decision rests on. Where no pair is captured, or the pairs disagree, the batch-major order stays.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def merged(folded: torch.Tensor, batch: int, heads: int, head_major: bool) -> torch.Tensor:
    """A folded per-head tensor (B·h, L, hs) with its heads joined back, (B, L, h·hs), in the order given."""
    rest = folded.shape[1:]
    split = (folded.reshape(heads, batch, *rest).transpose(0, 1) if head_major
             else folded.reshape(batch, heads, *rest))  # (B, h, L, hs)
    return split.transpose(1, 2).reshape(batch, rest[0], -1)


def unfolded(folded: torch.Tensor, batch: int, heads: int) -> torch.Tensor:
    """A head-major folded tensor (h·B, …) read as (B, h, …)."""
    return folded.reshape(heads, batch, *folded.shape[1:]).transpose(0, 1)


def heads_major(steps: Iterable[tuple[str, tuple[str, ...], torch.Tensor]], dims: dict[str, int]) -> str:
    """Why the run folds its heads head-major ("#12 re-joins to #7 only with …"), or "" where nothing shows it or a
    pair shows the batch-major order. ``steps``: (label, named shape, value as the run reads it)."""
    batch, heads = dims.get("B"), dims.get("h")
    if not batch or not heads or batch == 1 or heads == 1:
        return ""
    steps = list(steps)
    folded = [(label, named, value) for label, named, value in steps if len(named) == 4 and named[:2] == ("B", "h")
              and value.dim() == 3 and value.shape[0] == batch * heads and value.is_floating_point()]
    wholes = [(label, named, value) for label, named, value in steps if len(named) == 3 and named[0] == "B"
              and value.dim() in (3, 4) and value.shape[0] == batch and value.is_floating_point()]
    found = ""
    for label, named, value in folded:
        for whole, whole_named, tensor in wholes:
            if whole_named[1] != named[2] or tensor.numel() != value.numel() or tensor.shape[1] != value.shape[1]:
                continue
            joined = tensor.reshape(batch, tensor.shape[1], -1)
            if torch.equal(merged(value, batch, heads, False), joined):
                return ""  # a batch-major pair: the catalogue's reading holds
            if not found and torch.equal(merged(value, batch, heads, True), joined):
                found = (f"{label} re-joins to {whole} only read head-major (row head·B + item: the heads folded "
                         f"into the batch as (h·B, …), h = {heads}, B = {batch})")
    return found
