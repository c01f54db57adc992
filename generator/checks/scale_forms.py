"""The scaling bug forms: the scores' (``ScaledScores.BUG_FORMS``), Q·Kᵀ without the 1/√hs, and Q·Kᵀ times another
constant than 1/√hs, fitted; the probabilities' (``SoftmaxRows.BUG_FORMS``), the softmax of Q·Kᵀ without the 1/√hs. Q·Kᵀ
unscaled plus a relative position bias of a learned table is no bug form: it is T5's attention, which
``ScaledScores`` passes (``position_bias.t5_form``) before any bug form is tried."""

from __future__ import annotations

import math
from typing import Any

import torch

from transformer_trace.checks.base import close, tolerance
from transformer_trace.checks.evidence import Fit
from transformer_trace.checks.position_bias import relative_bias
from transformer_trace.sources import TensorSource


SCALE_TOLERANCE = 1e-3  # a fitted scale against the one claimed, relative: float rounding moves it by ~1e-6


def fitted_scale(scores: torch.Tensor, product: torch.Tensor) -> tuple[float, float] | None:
    """The constant c of scores = c·product over the finite entries, and the fit's residual relative to the scores'
    size; None where there is nothing to fit."""
    finite = torch.isfinite(scores) & torch.isfinite(product)
    x, y = product[finite], scores[finite]
    if x.numel() == 0 or float((x * x).sum()) == 0.0 or float((y * y).sum()) == 0.0:
        return None
    c = float((x * y).sum() / (x * x).sum())
    return c, float((y - c * x).norm() / y.norm())


def scale_off(scores: torch.Tensor, product: torch.Tensor, c: float, what: str) -> str | None:
    """Why scores of magnitude below 1, which the checks' tolerance (absolute there) passes at any scale near it, are
    not ``product`` × ``c`` after all: judged as a ratio, their scale is another; None where it is ``c`` or the scores
    are larger (or are no multiple of the product at all)."""
    finite = torch.isfinite(product)
    size = float(product[finite].abs().max()) if bool(finite.any()) else 0.0
    fitted = fitted_scale(scores, product) if 0.0 < size * abs(c) < 1.0 else None
    if fitted is None or fitted[1] > SCALE_TOLERANCE or abs(fitted[0] / c - 1) <= SCALE_TOLERANCE:
        return None
    return (f"but judged as a ratio (the scores are at most {size * abs(c):.1e}, below the tolerance's scale), they "
            f"are Q·Kᵀ × {fitted[0]:.4g}, not {what}")


def close_scaled(scores: torch.Tensor, product: torch.Tensor, c: float, what: str) -> tuple[bool, str]:
    """The scores compared with ``product`` × ``c`` (``close``), failed where they pass only because they are small
    (``scale_off``): the scale judged as a ratio."""
    passed, detail = close(scores, product * c, what)
    if passed and (off := scale_off(scores, product, c, "unscaled" if c == 1.0 else f"× {c:.4g}")) is not None:
        return False, f"{detail}; {off}"
    return passed, detail


def scores_unscaled(check: Any, s: TensorSource) -> Fit:
    """The scores Q·Kᵀ with no scale at all (``check``: a ``ScaledScores``), or Q·Kᵀ unscaled plus a bias linear in
    the key's offset (ALiBi's, whose models scale: T5's learned table, which does not, passed before any bug form)."""
    scores, product, hs = check.product(s)
    fits, detail = close_scaled(scores, product, 1.0, "vs Q·Kᵀ unscaled")
    biased = "" if fits else " plus a relative position bias"
    if not fits:
        fits, detail = relative_bias(scores, product)
    return Fit(fits, f"your scores equal Q·Kᵀ{biased} without the 1/√{hs} (= {1 / math.sqrt(hs):.4f}) scaling "
               f"({detail})" if fits else detail)


def scores_another_scale(check: Any, s: TensorSource) -> Fit | None:
    """The scores Q·Kᵀ times one constant that is not 1/√hs (1/√C, 1/hs): the constant fitted over the finite
    entries."""
    scores, product, hs = check.product(s)
    finite = torch.isfinite(scores)
    x, y = product[finite], scores[finite]
    if x.numel() == 0 or float((x * x).sum()) == 0.0:
        return None
    c = float((x * y).sum() / (x * x).sum())
    if abs(c * math.sqrt(hs) - 1) < 1e-3 or abs(c - 1) < 1e-3 or c <= 0:
        return None  # the right scale, or none (the form above)
    fits, detail = close(y, c * x, f"vs Q·Kᵀ × {c:.4g}, the factor fitted")
    fits &= (fitted_scale(y, x) or (c, 1.0))[1] <= SCALE_TOLERANCE  # a ratio, also where the scores are small
    as_root = f" = 1/√{1 / c ** 2:.4g}"
    return Fit(fits, f"your scores equal Q·Kᵀ × {c:.4g}{as_root} where the scaling is 1/√{hs} (= "
               f"{1 / math.sqrt(hs):.4f}) ({detail})" if fits else detail)


def weights_unscaled(check: Any, s: TensorSource) -> Fit | None:
    """The probabilities are the softmax of Q·Kᵀ with no 1/√hs (``check``: a ``SoftmaxRows`` whose scores a trace
    derived, or captured, as Q·Kᵀ/√hs from its per-head ``q`` and ``k``): the softmax of the scores × √hs, the blocked
    entries left blocked. Exact, where the factor fitted from the log-weights misses √hs by the rounding of weights
    near 0 (``softmax(logits * self.scale)`` with the scale 1)."""
    if check.q is None or check.k is None or not (s.has(check.q) and s.has(check.k)):
        return None
    weights, logits, q, k = s.t(check.out), s.t(check.scores), s.t(check.q), s.t(check.k)
    if q.dim() != 4 or k.shape != q.shape or logits.shape != q.shape[:-1] + k.shape[-2:-1] or \
            weights.shape != logits.shape:
        return None
    hs = q.shape[-1]
    finite = torch.isfinite(logits)
    if not close(logits[finite], (q @ k.transpose(-2, -1) / math.sqrt(hs))[finite], "")[0]:
        return None  # scores captured unscaled (the 1/√hs applied at the softmax is a correct form), or not Q·Kᵀ
    used = finite & (weights > 0)
    fits, detail = close(weights, torch.softmax(logits.masked_fill(~used, float("-inf")) * math.sqrt(hs), dim=-1),
                         "vs the softmax of Q·Kᵀ unscaled, the entries it gives no weight blocked")
    return Fit(fits, f"your weights are the softmax of Q·Kᵀ without the 1/√{hs} (= {1 / math.sqrt(hs):.4f}) scaling "
               f"({detail})" if fits else detail)


def softmax_applies_no_scale(probs: torch.Tensor, scores: torch.Tensor, hs: int) -> bool:
    """Whether ``probs`` are the softmax of the unscaled ``scores`` as they are, and fit so by far better than with
    1/√hs applied inside the softmax: then no scale was applied anywhere, and a 1/√hs "applied at the softmax" is no
    reading of them. Where the scores are so small that the scale moves the probabilities by less than the tolerance
    (weights drawn with a std of 0.02), both fit; the plain softmax, exact to float rounding, is then the closer by
    far."""
    if probs.shape != scores.shape:
        return False
    blocked = probs == 0

    def error(logits: torch.Tensor) -> float:
        rebuilt = (torch.softmax(logits.double().masked_fill(blocked, float("-inf")), dim=axis) for axis in (-1, -2))
        return min(float((probs.double() - r).nan_to_num(0.0).abs().max()) for r in rebuilt)

    plain, scaled = error(scores), error(scores / math.sqrt(hs))
    return plain <= tolerance() and plain * 10 < scaled
