"""Query rows that attend to no key: every key masked alike, so the softmax is uniform over every key (or NaN under
−inf). A padded query of an all-padding sequence is such a row by design; a query of a sequence whose keys are real is
not (an inverted mask, `mask == True` filled, hides every real key). The property names it only with evidence that real
keys exist: the captured mask allows the row some key, or the keys' token IDs are not all one ID (padding is one ID)."""

from __future__ import annotations

from typing import Any

import torch

from transformer_trace.checks.base import MASK_FILL
from transformer_trace.checks.evidence import Property
from transformer_trace.checks.masks import mask_allows
from transformer_trace.sources import TensorSource

UNIFORM_TOLERANCE = 1e-6  # a row within this of 1/S everywhere: uniform over every key
SCORE_SPREAD = 1e-3  # scores this far apart in one row give weights that differ by far more than UNIFORM_TOLERANCE


def blind_rows(weights: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """The query rows (…, T, 1) that see no key by masking: uniform over every key (or NaN throughout) although their
    scores differ from key to key, or whose every score sits at a masking value (−inf, ≤ −1e4)."""
    keys = weights.shape[-1]
    uniform = ((weights - 1.0 / keys).abs().amax(-1, keepdim=True) <= UNIFORM_TOLERANCE) | (
        torch.isnan(weights).all(-1, keepdim=True))
    finite = torch.isfinite(scores)
    high = scores.masked_fill(~finite, float("-inf")).amax(-1, keepdim=True)
    low = scores.masked_fill(~finite, float("inf")).amin(-1, keepdim=True)
    varied = torch.nan_to_num(high - low, nan=0.0, neginf=0.0) > SCORE_SPREAD
    at_fill = (scores <= -MASK_FILL).all(-1, keepdim=True)
    return uniform & (varied | at_fill)


def _real_token_items(ids: torch.Tensor, batch: int, keys: int) -> torch.Tensor | None:
    """Per batch item, whether its keys' token IDs hold more than one ID (so not every key is padding); None where the
    IDs are not one row of ``keys`` per item."""
    ids = ids[None] if ids.dim() == 1 else ids
    if ids.dim() != 2 or ids.shape != (batch, keys) or ids.is_floating_point():
        return None
    return torch.tensor([len(row.unique()) > 1 for row in ids])


def _every_key_masked(check: Any, s: TensorSource) -> str | None:
    weights, scores = s.t(check.out), s.t(check.scores)
    if weights.dim() < 3 or weights.shape != scores.shape or weights.shape[-1] < 2:
        return None
    blind = blind_rows(weights, scores.to(weights.dtype))
    if not bool(blind.any()):
        return None
    name = s.name(check.out)
    if getattr(check, "mask", None) is not None and s.has(check.mask):
        allowed, kind = mask_allows(s.cpu(check.mask))
        try:
            seeing = blind & allowed.any(-1, keepdim=True).expand_as(blind)
        except RuntimeError:  # a mask that does not broadcast over the weights: another check's matter
            seeing = blind.new_zeros(())
        if bool(seeing.any()):
            return (f"query i attends to no real key: every key masked: your {name} has {int(seeing.sum())} query "
                    f"rows uniform over every key (each key masked alike) although your {kind} mask "
                    f"({s.name(check.mask)}) allows each of them some key")
    tokens = getattr(check, "tokens", None)
    if tokens is None or not s.has(tokens):
        return None
    batch, keys = weights.shape[0], weights.shape[-1]
    real = _real_token_items(s.cpu(tokens), batch, keys)
    if real is None:
        return None
    hit = blind.reshape(batch, -1).all(-1) & real
    if not bool(hit.any()):
        return None
    return (f"query i attends to no real key: every key masked: in {int(hit.sum())} of {batch} batch items every "
            f"query row of your {name} is uniform over all {keys} keys (each key masked alike, its scores differing), "
            f"although the item's keys ({s.name(tokens)}) hold more than one token ID: real tokens, not all padding")


EVERY_KEY_MASKED = Property("some real key seen by every real query", "rows uniform over every key where real keys "
                            "exist (the captured mask, or the keys' token IDs)", _every_key_masked)
