"""Soft-capped attention scores, Gemma 2's ``cap · tanh(Q·Kᵀ/√hs / cap)``: the scores bent toward ±cap by a tanh
before the mask. A correct form of the scores step, the cap fitted from the entry of largest magnitude (``c · tanh(x /
c)`` grows with c, so one entry decides it) and every entry then recomputed with it. Its bug forms: the cap applied
to Q·Kᵀ without the 1/√hs ("1/√d missing"), and the tanh given the scores undivided by the cap (``cap · tanh(s)``, the
cap fitted by least squares), neither of which a cap of any value gives."""

from __future__ import annotations

import math
from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import Fit
from transformer_trace.sources import TensorSource

SOFT_CAP_CLAIM = "equals cap · tanh(Q·Kᵀ/√hs / cap), per head: the scores soft-capped (Gemma 2)"


def fitted_cap(scores: torch.Tensor, logits: torch.Tensor) -> float | None:
    """The c with ``c · tanh(x / c) = y`` at the entry of largest |x| (``logits`` x, ``scores`` y, finite entries);
    None where the scores are not bent toward 0 there (no cap, or another form)."""
    finite = torch.isfinite(scores) & torch.isfinite(logits)
    if not bool(finite.any()):
        return None
    x, y = logits[finite].double(), scores[finite].double()
    at = int(x.abs().argmax())
    x0, y0 = abs(float(x[at])), float(y[at]) * (1.0 if float(x[at]) >= 0 else -1.0)
    if not 0 < y0 < x0 * (1 - 1e-4):
        return None
    low, high = y0, y0 * 1e6  # c · tanh(x0 / c) rises from about y0 (c = y0 is below) toward x0
    for _ in range(200):
        middle = math.sqrt(low * high)
        if middle * math.tanh(x0 / middle) < y0:
            low = middle
        else:
            high = middle
    return math.sqrt(low * high)


def soft_capped(scores: torch.Tensor, logits: torch.Tensor, of: str) -> tuple[bool, str, float] | None:
    """(whether ``scores`` is cap · tanh(``logits`` / cap) for a fitted cap, the detail, the cap); None where no cap
    is fitted."""
    cap = fitted_cap(scores, logits)
    if cap is None:
        return None
    rebuilt = torch.where(torch.isfinite(scores), cap * torch.tanh(logits / cap), scores)
    fits, detail = close(scores, rebuilt, f"recomputed {cap:.4g} · tanh({of} / {cap:.4g}), the cap fitted")
    return fits, detail, cap


def capped_scores(check: Any, s: TensorSource) -> tuple[str, bool, str] | None:
    """The correct form, for a ``ScaledScores``: (the claim, True, the detail) where the scores are soft-capped
    Q·Kᵀ/√hs; None where they are not."""
    scores, product, hs = check.product(s)
    found = soft_capped(scores, product / math.sqrt(hs), f"Q·Kᵀ/√{hs}")
    if found is None or not found[0]:
        return None
    return SOFT_CAP_CLAIM, True, found[1]


def capped_unscaled(check: Any, s: TensorSource) -> Fit | None:
    """Bug form: the scores are cap · tanh(Q·Kᵀ / cap), the 1/√hs left out before the cap."""
    scores, product, hs = check.product(s)
    found = soft_capped(scores, product, "Q·Kᵀ")
    if found is None:
        return None
    fits, detail, cap = found
    return Fit(fits, f"your scores are soft-capped Q·Kᵀ without the 1/√{hs} (= {1 / math.sqrt(hs):.4f}) scaling, "
               f"cap {cap:.4g} ({detail})" if fits else detail)


def capped_undivided(check: Any, s: TensorSource) -> Fit | None:
    """Bug form: the scores are cap · tanh(Q·Kᵀ/√hs), the tanh given the scores without dividing by the cap first
    (cap fitted by least squares; a cap of 1 is the correct form's own)."""
    scores, product, hs = check.product(s)
    finite = torch.isfinite(scores)
    bent = torch.tanh(product / math.sqrt(hs))
    x, y = bent[finite].double(), scores[finite].double()
    if x.numel() == 0 or float((x * x).sum()) == 0.0:
        return None
    cap = float((x * y).sum() / (x * x).sum())
    if cap <= 0 or abs(cap - 1) < 1e-3:
        return None
    fits, detail = close(scores, torch.where(finite, cap * bent, scores), f"vs {cap:.4g} · tanh(Q·Kᵀ/√{hs})")
    return Fit(fits, f"your scores are {cap:.4g} · tanh(Q·Kᵀ/√{hs}): the soft cap's tanh was given the scores "
               f"undivided by the cap ({detail})" if fits else detail)
