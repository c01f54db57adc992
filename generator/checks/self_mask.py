"""Scores that are Q·Kᵀ × a scale but where a mask wrote a masking value (|x| ≥ ``MASK_FILL``), and scores scaled by a
temperature of each head's own (Locality Self-Attention, "Vision Transformer for Small-Size Datasets": a learned
scale per head applied to Q·Kᵀ, then the diagonal set to −987654321 in place so that no token attends to itself).

A masked entry is read as a mask, never as a value to fit: it is left out of every comparison and of its scale (a
tolerance scaled by a masking value passes any scores). Of the masks, only the one an encoder may hold without a mask
step of its own is a correct form here: each query masked from itself (the diagonal). The rest of the scores are then
compared with Q·Kᵀ/√hs, or with Q·Kᵀ × a scale fitted per head where the heads' scales differ (a learned temperature
after training). Where every head's fitted scale is one and the same value other than 1/√hs (1 included), the scores
cannot tell a temperature per head still at its initial value from a missing or wrong 1/√hs: the parameter that would
say is not read here, so that is said, never called a bug.

Bug form: the mask written with a large *positive* value (``POSITIVE_MASK``): the softmax then gives each masked key
all of its query's weight, the rest of the scores being right."""

from __future__ import annotations

import math
from typing import Any

import torch

from transformer_trace.checks.base import MASK_FILL, close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.fitted_bias import ALIBI_REVERSED, scaled_with_bias
from transformer_trace.checks.position_bias import bias_claim, relative_bias
from transformer_trace.sources import TensorSource

SPREAD = 1e-3  # heads' fitted scales this far apart, relative, differ (float rounding moves a fit by ~1e-6)


def masking_entries(scores: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Where ``scores`` hold a masking value (±inf, or finite with |x| ≥ MASK_FILL) that ``expected`` does not."""
    return (~torch.isfinite(scores) | (scores.abs() >= MASK_FILL)) & (expected.abs() < MASK_FILL)


def _diagonal(masked: torch.Tensor) -> bool:
    """Whether the masked entries are exactly each query's own key, in every item and head."""
    queries, keys = masked.shape[-2:]
    return queries == keys and bool((masked == torch.eye(queries, dtype=torch.bool)).all())


def _scales_per_head(scores: torch.Tensor, product: torch.Tensor, keep: torch.Tensor) -> torch.Tensor | None:
    """The constant c_h of scores = c_h · product over each head's kept entries (B, h, Lq, Lk); None where a head has
    nothing to fit."""
    x, y = product.masked_fill(~keep, 0.0), scores.masked_fill(~keep, 0.0)
    denominator = (x * x).sum(dim=(0, 2, 3))
    if bool((denominator == 0).any()):
        return None
    return (x * y).sum(dim=(0, 2, 3)) / denominator


def _rest(scores: torch.Tensor, expected: torch.Tensor, keep: torch.Tensor, what: str) -> tuple[bool, str]:
    return close(scores.masked_fill(~keep, 0.0), expected.masked_fill(~keep, 0.0), what)


def masked_or_scaled_per_head(scores: torch.Tensor, product: torch.Tensor, hs: int,
                              kept: torch.Tensor | None = None) -> tuple[str, bool, str] | None:
    """How the scores read when they are not Q·Kᵀ/√hs whole (``product``: Q·Kᵀ per head, (B, h, Lq, Lk); ``kept``: Q·K
    with the keys read kept transposed, for a bias beside a scale of its own only, fitted_bias.py): a correct
    form (the claim, True, the detail), a form told apart from none of the bug forms (a claim, False, why: the check
    is then unrecognised), or None (not a form of this module's: the scores' other forms and bug forms are tried)."""
    if scores.dim() != 4 or scores.shape != product.shape:
        return None
    expected = product / math.sqrt(hs)
    masked = masking_entries(scores, expected)
    mask = ""
    if bool(masked.any()):
        if bool((scores[masked] > 0).any()) or not _diagonal(masked):
            return None  # a positive masking value is a bug form's; another mask the mask's own steps judge
        mask = f", each query masked from itself (its own key's score set to {float(scores[masked].max()):g})"
    keep = ~masked
    what = f"recomputed Q·Kᵀ/√{hs} per head{' where not masked' if mask else ''}"
    same, detail = _rest(scores, expected, keep, what)
    if same and mask:
        return f"equals Q·Kᵀ / √hs{mask}", True, detail
    if (biased := relative_bias(scores, expected))[0]:
        return bias_claim(f" / √{hs}") + mask, True, f"with the bias fitted: {biased[1]}"
    if not mask and (with_bias := scaled_with_bias(scores, product, hs, kept)) is not None:
        return with_bias  # a relative bias beside a scale of its own, fitted (ALiBi's with 1/√C: fitted_bias.py)
    scales = _scales_per_head(scores, product, keep)
    if scales is None or bool((scales <= 0).any()):
        return None
    expanded = product * scales.view(1, -1, 1, 1)
    fits, fitted = _rest(scores, expanded, keep, "recomputed Q·Kᵀ × each head's own scale (fitted)")
    values = ", ".join(f"{float(c):.4g}" for c in scales)
    spread = float(scales.max() - scales.min()) / float(scales.abs().max())
    if fits and spread > SPREAD:
        return (f"equals Q·Kᵀ times a temperature per head (a learned scale, Locality Self-Attention's: fitted "
                f"{values}){mask}"), True, fitted
    if fits and mask:  # one value in every head, not 1/√hs: a temperature at its start, or the scale wrong
        return (f"equals Q·Kᵀ × {float(scales[0]):.4g} in every head{mask}"), False, (
            f"{detail}; {fitted}: a scale of {float(scales[0]):.4g} (1/√{hs} = {1 / math.sqrt(hs):.4g}) in every "
            "head, which a learned temperature per head at its initial value gives as well as a missing or other "
            "1/√hs: the scores cannot tell them apart")
    return None


def _positive_mask(check: Any, s: TensorSource) -> Fit | None:
    """The scores where a mask should put a large negative value hold a large positive one (+987654321): the rest
    Q·Kᵀ × a scale (1/√hs, or fitted per head), the masked entries ≥ MASK_FILL."""
    scores, product, hs = check.product(s)
    if scores.dim() != 4 or scores.shape != product.shape:
        return None
    masked = masking_entries(scores, product / math.sqrt(hs))
    high = masked & (scores > 0)
    if not bool(high.any()):
        return None
    scales = _scales_per_head(scores, product, ~masked)
    if scales is None:
        return None
    fits, detail = _rest(scores, product * scales.view(1, -1, 1, 1), ~masked,
                         "the other scores vs Q·Kᵀ × each head's scale (fitted)")
    where = "each query's own key" if _diagonal(high) else f"{int(high.sum()):,} entries"
    return Fit(fits, f"your scores hold {float(scores[high].min()):g} at {where}, where a mask writes a large "
               f"negative value: the softmax gives that key all the weight instead of none ({detail})" if fits
               else detail)


POSITIVE_MASK = BugForm("masked with a large positive value", "the masked entries ≥ +1e4, the rest Q·Kᵀ × a scale",
                        _positive_mask)
SCORE_FORMS = (POSITIVE_MASK, ALIBI_REVERSED)  # the scores' bug forms read beside a mask or a bias
