"""Retention (RetNet's parallel form, Sun et al. 2023): ``(Q·Kᵀ ⊙ D)·V`` with D a causal **decay** matrix, γ^(n−m)
on and below the diagonal and 0 above it. The mask multiplies the scores instead of moving them to −inf, and no
softmax follows: the decayed scores are the weights V is averaged with. A decay mask is told from every other mask by
its values alone: non-negative, finite, not only 0s and 1s (a 0/1 mask is a boolean one), 0 where it blocks. Its
bug form: a decay that grows with the distance (older keys weighed more than newer ones)."""

from __future__ import annotations

from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.sources import TensorSource

DECAY_KIND = "multiplicative decay, 0 = blocked (retention's D: the scores times it, no softmax)"
DECAY_TOLERANCE = 1e-6  # two neighbouring keys' decay factors, compared: float rounding of γ^k


def decay_allows(mask: torch.Tensor) -> tuple[torch.Tensor, str] | None:
    """Where a decay mask lets a query see a key (its entries above 0), and how it says so; None where ``mask`` is
    no decay mask (boolean, 0/1, additive with negative entries, or not finite)."""
    if mask.dtype == torch.bool or not mask.is_floating_point() or mask.numel() == 0:
        return None
    if not bool(torch.isfinite(mask).all()) or float(mask.min()) < 0:
        return None
    if set(mask.unique().tolist()) <= {0.0, 1.0}:
        return None
    return mask > 0, DECAY_KIND


def is_decay(mask: torch.Tensor) -> bool:
    return decay_allows(mask) is not None


def grows_back(mask: torch.Tensor) -> int:
    """How many pairs of neighbouring keys at or before their query (key m − 1 older than key m) a decay mask weighs
    the older one more: 0 for a decay γ^(n−m) with 0 < γ ≤ 1."""
    queries, keys = mask.shape[-2:]
    past = torch.ones(queries, keys, dtype=torch.bool).tril()
    both = past[:, 1:] & past[:, :-1]  # key m − 1 and key m both at or before the query
    older_heavier = (mask[..., :, :-1] - mask[..., :, 1:]) > DECAY_TOLERANCE * mask.abs().amax().clamp(min=1.0)
    return int((older_heavier & both).sum())


def decayed_scores(got: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
    """The decayed scores as a retention computes them, closest first: the scores times the mask; the same times a
    constant fitted (scores derived with a 1/√hs the retention never applies: its value is the scores' check's
    matter, where they are captured)."""
    product = scores * mask.to(scores.dtype)
    forms = [(product, "the scores times the multiplicative decay mask (retention)")]
    norm = float((product * product).sum())
    if norm > 0 and got.shape == product.shape and bool(torch.isfinite(got).all()):
        c = float((got * product).sum()) / norm
        forms.append((c * product, f"the scores times the multiplicative decay mask, times {c:.4g} (fitted: a scale "
                                   "of the scores the retention does not share; retention has no softmax)"))
    return forms


def _decay_reversed(check: Any, s: TensorSource) -> Fit | None:
    """Every row of the decay mask grows going back from the diagonal: γ^(m−n) for γ^(n−m) (older keys weighed
    more, not less)."""
    mask = s.cpu(check.mask)
    if not is_decay(mask):
        return None
    pairs = grows_back(mask)
    queries, keys = mask.shape[-2:]
    total = int(torch.ones(queries, keys, dtype=torch.bool).tril()[:, 1:].sum()) * max(1, mask[..., 0, 0].numel())
    if pairs == 0:
        return Fit(False, "the decay never grows going back")
    ratio = (mask[..., 1, 0] / mask[..., 1, 1]).flatten() if queries > 1 and keys > 1 else mask.new_ones(1)
    return Fit(pairs == total, f"the decay is reversed: your {s.name(check.mask)} weighs {pairs} of {total} older keys "
                               f"more than the key after them (D[1, 0] / D[1, 1] = {float(ratio.max()):.4g} > 1: "
                               "γ^(m−n) where retention decays by γ^(n−m), γ < 1)")


DECAY_REVERSED = BugForm("decay reversed", "the decay mask's rows vs a decay that grows going back", _decay_reversed)


def decays(mask: torch.Tensor) -> tuple[bool, str]:
    """Whether a decay mask weighs older keys no more than newer ones, in words."""
    pairs = grows_back(mask)
    return pairs == 0, (f"the decay never grows going back from the diagonal: {pairs == 0}"
                        + (f" ({pairs} older keys weighed more than the key after them)" if pairs else ""))


def fits_decayed(got: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor) -> tuple[bool, str]:
    """Whether ``got`` is the scores times the decay mask (a fitted constant allowed), in words."""
    detail = ""
    for expected, how in decayed_scores(got, scores, mask):
        same, detail = close(got, expected, f"recomputed: {how}")
        if same:
            return True, detail
    return False, detail
