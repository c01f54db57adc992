"""Scores that are Q·Kᵀ × a scale s plus a bias the same for every input (jaketae's ALiBi: ``matmul(query, key) /
sqrt(d_model) + m_h · (j − i)``), where s is not 1/√hs (that form is read in position_bias.py). The scale is fitted
from the differences between the batch's items, which the shared bias cancels; the bias is then the scores − s·Q·Kᵀ,
and must be the same for every item and a function of the key's offset from the query (plus a constant per query
row, which no softmax sees). s = 1 is left to the bug form "1/√d missing"; masking-size entries make no fit (they
would set the tolerance).

ALiBi is the member whose bias is linear in j − i with one slope per head (reported). Its bug form: the distances
reversed (``y − x``), the bias *growing* with the distance to a past key in every head, each query leaning to the
oldest keys (``ALIBI_REVERSED``)."""

from __future__ import annotations

import math
from typing import Any

import torch

from transformer_trace.checks.base import MASK_FILL, close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.position_bias import relative_bias
from transformer_trace.checks.rotary import attention_operand
from transformer_trace.sources import TensorSource


def fitted_scale_and_bias(scores: torch.Tensor, product: torch.Tensor) -> tuple[float, torch.Tensor] | None:
    """(s, the bias (1, h, Lq, Lk)) with scores = s · product + a bias every batch item shares; None where the scores
    are not (B ≥ 2, h, Lq, Lk) of finite values below the masking size, or s is not positive."""
    if scores.dim() != 4 or scores.shape != product.shape or scores.shape[0] < 2:
        return None
    if not bool(torch.isfinite(scores).all()) or bool((scores.abs() >= MASK_FILL).any()):
        return None
    ds, dp = (scores - scores.mean(0, keepdim=True)).double(), (product - product.mean(0, keepdim=True)).double()
    denominator = float((dp * dp).sum())
    if denominator == 0.0:
        return None
    s = float((ds * dp).sum()) / denominator
    if s <= 0:
        return None
    bias = scores - s * product
    if not close(bias, bias[:1].expand_as(bias), "")[0]:
        return None
    return s, bias[:1]


def distance_slopes(bias: torch.Tensor) -> torch.Tensor | None:
    """The slope m_h per head of a bias (1, h, Lq, Lk) that is m_h · (j − i) plus a constant per query row over the
    keys up to the query's own (a causal model's, the ones a softmax sees); None where no such line fits."""
    queries, keys = bias.shape[-2:]
    if queries < 3 or keys < 3:
        return None
    offset = (torch.arange(keys)[None, :] - torch.arange(queries)[:, None] - (keys - queries)).to(bias.dtype)
    seen = offset <= 0
    rows = seen.sum(-1, keepdim=True).clamp_min(1)
    def centred(x: torch.Tensor) -> torch.Tensor:
        return (x - (x * seen).sum(-1, keepdim=True) / rows) * seen
    b, d = centred(bias[0]), centred(offset)
    denominator = float((d * d).sum())
    if denominator == 0.0:
        return None
    slopes = (b * d).sum(dim=(-2, -1)) / denominator
    if not close(b, slopes[:, None, None] * d, "")[0]:
        return None
    return slopes


def _slopes_said(slopes: torch.Tensor) -> str:
    return ", ".join(f"{float(m):.4g}" for m in slopes)


def keys_kept(check: Any, s: TensorSource) -> torch.Tensor | None:
    """Q·K per head with the keys read as kept transposed, (B, h, hs, T) (``key.permute(0, 2, 3, 1)``), for a check
    with ``q`` and ``k``; None where the keys' shape does not allow it (where T = hs, the plain reading takes them
    for (B, h, T, hs) as well: which fits is the scores' matter)."""
    q, k = attention_operand(s, check.q), attention_operand(s, check.k)
    if q.dim() != 4 or k.dim() != 4 or q.shape[:2] != k.shape[:2] or k.shape[-2] != q.shape[-1]:
        return None
    return q @ k


def _fitted(scores: torch.Tensor, products: list[tuple[torch.Tensor | None, str]]) -> Any:
    """The first of ``products`` (each with how its keys were read) beside which the scores have a shared bias."""
    return next(((fitted, product, how) for product, how in products if product is not None
                 and (fitted := fitted_scale_and_bias(scores, product)) is not None), None)


def scaled_with_bias(scores: torch.Tensor, product: torch.Tensor, hs: int,
                     kept: torch.Tensor | None = None) -> tuple[str, bool, str] | None:
    """The scores read as s · Q·Kᵀ plus a relative bias every input shares, s fitted (not 1, not 1/√hs): the claim,
    whether it holds (ALiBi's distances reversed does not), the detail; None where no such bias fits. ``kept``: Q·K
    with the keys read kept transposed (``keys_kept``), tried after the plain product."""
    found = _fitted(scores, [(product, ""), (kept, " (the keys kept transposed, (B, h, hs, T): Q·K)")])
    if found is None:
        return None
    (s, bias), product, how = found
    if abs(s - 1) < 1e-3 or abs(s * math.sqrt(hs) - 1) < 1e-3:
        return None  # no scale (the bug form 1/√d missing), or the scale read with the bias elsewhere
    relative, detail = relative_bias(scores, s * product)
    if not relative:
        return None
    scale = (f"Q·Kᵀ × {s:.4g}{how} (= 1/√{1 / s ** 2:.4g}, fitted from the batch's items, which the bias is the same "
             "for)")
    slopes = distance_slopes(bias)
    if slopes is not None and bool((slopes < 0).all()):
        return f"equals {scale} plus ALiBi's distance bias", False, (
            f"{detail}; the bias is linear in the key's distance with slopes {_slopes_said(slopes)} per head: it grows "
            "with the distance to a past key")
    member = f"; ALiBi's m_h · (j − i), slopes {_slopes_said(slopes)} per head" if slopes is not None else ""
    return (f"equals {scale} plus a relative position bias the same for every input{member}"), True, detail


def _reversed(check: Any, s: TensorSource) -> Fit | None:
    scores, product, _ = check.product(s)
    found = _fitted(scores, [(product, ""), (keys_kept(check, s), "")])
    slopes = distance_slopes(found[0][1]) if found is not None else None
    if found is None or slopes is None:
        return None
    fitted = found[0]
    fits = bool((slopes < 0).all())
    return Fit(fits, f"your scores are Q·Kᵀ × {fitted[0]:.4g} plus a distance bias whose slopes per head "
               f"({_slopes_said(slopes)}) are negative: the bias grows with the distance to a past key, so every query "
               "leans to the oldest keys (ALiBi's distances reversed: i − j for j − i)" if fits
               else f"slopes per head {_slopes_said(slopes)}: the bias shrinks with the distance")


ALIBI_REVERSED = BugForm("ALiBi's distances reversed", "the bias fitted beside a fitted scale, linear in the key's "
                         "distance, its slopes' sign", _reversed)
