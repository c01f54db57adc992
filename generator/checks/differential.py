"""Differential attention's score maps (Ye et al. 2024, "Differential Transformer"): each head's queries and keys are
projected to twice the width of a map and split in two halves (``Q1, Q2 = Q.chunk(2, -1)``), and each map's scores
are one half's product, scaled by 1/√ of the half's width (``Q1·K1ᵀ/√d``). A step marked on one map's scores, read
with the whole per-head q and k the script's other steps show, is that half's product: ``ScaledScores.read`` takes
it where the whole product fits no constant multiple of the scores and one half's does, so that its claim and its
bug forms (1/√d missing, another scale) judge the map with d the half's width.

The context is the difference of the maps applied to the values, ``(attention1 − λ·attention2) @ V``: where the
probabilities' step shows the first map and the context's line read the difference, ``DifferenceContext`` checks the
context from that difference (trace/reading/difference_context.py binds it): the first map minus the difference is λ
times a softmax map, so its rows sum to one λ per head; and a causal map gives a later key no weight, in the
difference as in the first map (a second map left unmasked leaks the future through it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.base import THIS, Check, close
from transformer_trace.checks.evidence import Property
from transformer_trace.sources import Ref, TensorSource

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


def _later_key_seen(check: Any, s: TensorSource) -> str | None:
    """Weight on a key the first map gives none, above the diagonal (a causal model's later keys)."""
    weights, first = s.t(check.weights), s.t(check.first)
    queries, keys = weights.shape[-2:]
    above = torch.triu(torch.ones(queries, keys, dtype=torch.bool), diagonal=1) & (first == 0).all(0).all(0)
    if not above.any():
        return None
    seen = int((weights[..., above].abs() > 1e-6).sum())
    return (f"a position sees the next: {seen} weights on a later position in the maps' difference your line read, "
            f"the largest {float(weights[..., above].abs().max()):g} (the first map gives them none)" if seen else None)


@dataclass(frozen=True, kw_only=True)
class DifferenceContext(Check):
    """``out`` (B, h, T, hs) is ``weights``·V per head, ``weights`` a differential attention's (the tensor the context's
    line read): the first map ``first`` (the probabilities' step) minus λ times a second map, each row of
    ``first − weights`` summing to one λ per head; no weight on a key the first map blocks above the diagonal."""
    CLAIM = "is (the first map − λ·a second map)·V, per head"

    PROPERTIES = (Property("no query attends to a later key", "the maps' difference above the diagonal, where the "
                           "first map gives no weight", _later_key_seen),)
    SUBSTITUTES = False

    out: Ref = THIS
    weights: Ref
    first: Ref
    v_heads: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        out, weights, first, v = (s.t(ref) for ref in (self.out, self.weights, self.first, self.v_heads))
        name = "equals (the first map − λ·a second map)·V: a differential attention's context"
        same, detail = close(out, weights @ v, "recomputed (the maps' difference your line read)·V per head")
        if not same:
            return name, False, detail
        sums = (first - weights).sum(-1)  # (B, h, T): λ for every row of a head
        per_head = sums.mean(dim=(0, 2), keepdim=True)
        one, said = close(sums, per_head.expand_as(sums), "each row of the first map minus the difference, summed "
                          "(one λ per head)")
        lambdas = ", ".join(f"{float(x):.4g}" for x in per_head.flatten()[:8])
        later = _later_key_seen(self, s)
        return name, one and later is None, f"{detail}; {said} (λ per head: {lambdas}){'; ' + later if later else ''}"
