"""Differential attention's score maps (Ye et al. 2024, "Differential Transformer"): each head's queries and keys are
projected to twice the width of a map and split in two halves (``Q1, Q2 = Q.chunk(2, -1)``), and each map's scores
are one half's product, scaled by 1/√ of the half's width (``Q1·K1ᵀ/√d``). A step marked on one map's scores, read
with the whole per-head q and k the script's other steps show, is that half's product: ``ScaledScores.read`` takes
it where the whole product fits no constant multiple of the scores and one half's does, so that its claim and its
bug forms (1/√d missing, another scale) judge the map with d the half's width."""

from __future__ import annotations

import torch

from transformer_trace.checks.base import close

HALVES = ("first", "second")


def _fits_a_multiple(scores: torch.Tensor, product: torch.Tensor) -> bool:
    """Whether ``scores`` are one positive constant times ``product`` over their finite entries."""
    finite = torch.isfinite(scores)
    x, y = product[finite], scores[finite]
    if x.numel() == 0 or float((x * x).sum()) == 0.0:
        return False
    c = float((x * y).sum() / (x * x).sum())
    return c > 0 and close(y, c * x, "")[0]


def half_product(scores: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, int, str] | None:
    """(one half's Q·Kᵀ, the half's width, what was read in words) where the scores are a multiple of the product of
    one half of each head's q and k (q, k: (B, h, L, 2d)) and not of the whole product; None otherwise."""
    width = q.shape[-1]
    if width % 2 or k.shape[-1] != width or _fits_a_multiple(scores, q @ k.transpose(-2, -1)):
        return None
    d = width // 2
    for i, half in enumerate(HALVES):
        part = slice(i * d, (i + 1) * d)
        product = q[..., part] @ k[..., part].transpose(-2, -1)
        if _fits_a_multiple(scores, product):
            return product, d, (f" (the {half} half of each head's q and k, {d} of its {width} channels: one map of a "
                                "differential attention)")
    return None
