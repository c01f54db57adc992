"""Attention sinks (StreamingLLM's, gpt-oss's, modern_llm's): n learned key and value rows the queries attend to
besides the T positions, put in front of them, so the scores and probabilities are (…, T, n + T) while the queries,
the keys and values the script's own projections give, and the mask it builds cover the T positions only.

A correct form with one fitted parameter, n: the scores' (or probabilities') last axis minus the T positions of the
captured keys, values or mask, 0 < n < T and at most ``SINKS_AT_MOST`` (a few rows: a key/value cache read back has
as many or more than the new positions, and its keys are captured with it). The sinks are no positions: never "later"
than a query, their mask columns always allowed; the causal rule is judged on the T token columns alone. Their keys
and values are parameters no snapshot shows: their score columns are reported, not judged; their value rows are
fitted (one row per sink and head, shared by every batch item and query) where there are more rows to fit them on
than sinks."""

from __future__ import annotations

from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.masks import mask_allows, masked_as_written
from transformer_trace.sources import TensorSource

ALLOWING = "boolean, True = allowed"  # the one mask form in which a sink column is True (or 1)
SINKS_AT_MOST = 16  # a few learned rows; more extra keys than this are no sinks (a cache, a memory)


def sink_count(keys: int, positions: int) -> int:
    """The number of sinks n in front of ``positions`` token keys where a tensor over the keys is ``keys`` wide; 0
    where the widths say no sinks (equal, or too many extra keys to be a few learned rows)."""
    extra = keys - positions
    return extra if 0 < extra <= SINKS_AT_MOST and extra < positions else 0


def sinks_said(n: int, keys: int) -> str:
    """The fitted family member in words."""
    return (f"{n} attention sink{'s' if n > 1 else ''}, fitted: the {keys} keys are {n} learned "
            f"row{'s' if n > 1 else ''} in front of the {keys - n} positions")


def mask_with_sinks(mask: torch.Tensor, n: int) -> torch.Tensor:
    """``mask`` (…, T, T) with the n sinks' columns in front, always allowed, in the mask's own form: 0 where it is
    additive, True where True allows, False where True blocks."""
    front = mask.new_full((*mask.shape[:-1], n), mask_allows(mask)[1] == ALLOWING)  # 1 or True; 0 or False
    return torch.cat([front, mask], dim=-1)


def allowed_with_sinks(mask: torch.Tensor, keys: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Where a mask over T keys lets a query see one of ``keys`` = n + T (the sinks' columns allowed in front), the
    mask so widened, and n (0, the mask as it is, where the widths say no sinks)."""
    n = sink_count(keys, mask.shape[-1])
    widened = mask_with_sinks(mask, n) if n else mask
    return mask_allows(widened)[0], widened, n


def values_with_sinks(v: torch.Tensor, weights: torch.Tensor, context: torch.Tensor) -> tuple[torch.Tensor, str]:
    """``v`` (B, h, T, hs) with the sinks' value rows in front, where ``weights`` (B, h, T, n + T) are over n sinks
    and T positions: each head's n rows fitted by least squares from ``context`` (B, h, T, hs) minus what the
    positions give, one row per sink and head for every batch item and query (learned rows: no snapshot shows them).
    With no more rows to fit them on than sinks, the fit says nothing: the rows are left at 0 and said so. ``v`` as
    it is where the widths say no sinks."""
    n = sink_count(weights.shape[-1], v.shape[-2])
    if not n or v.dim() != 4 or context.shape != v.shape or weights.shape[:-1] != v.shape[:-1]:
        return v, ""
    B, H, T, hs = v.shape
    sinks, rest = weights[..., :n], context - weights[..., n:] @ v  # what the sinks' rows must give
    rows = sinks.transpose(0, 1).reshape(H, B * T, n).double()
    target = rest.transpose(0, 1).reshape(H, B * T, hs).double()
    if B * T <= n:
        fitted = v.new_zeros(H, n, hs)
        said = f"the {n} sinks' value rows not fitted ({B * T} rows for {n} unknowns per channel): judged as 0"
    else:
        fitted = torch.linalg.lstsq(rows, target).solution.to(v.dtype)
        said = (f"the {n} sinks' value rows fitted per head from the context ({B * T} rows per head, {n} unknowns per "
                "channel: no snapshot shows them)")
    return torch.cat([fitted.unsqueeze(0).expand(B, H, n, hs), v], dim=2), said


def _sinks_masked_behind(check: Any, s: TensorSource) -> Fit | None:
    """Masked scores over n sinks and T positions masked with the sinks' n always-allowed columns put after the
    mask's T (``torch.cat([mask, sink_columns])``) while the sinks' keys are in front (``check``: masked scores
    ``out`` of ``scores`` under a marked ``mask``)."""
    if check.mask is None:
        return None
    got, mask = s.t(check.out), s.cpu(check.mask)
    n, T = sink_count(got.shape[-1], mask.shape[-1]), mask.shape[-1]
    if not n:
        return None
    behind = torch.cat([mask, mask_with_sinks(mask, n)[..., :n]], dim=-1)
    recomputed, how = masked_as_written(got, s.t(check.scores), mask_allows(behind)[0], behind)
    fits, detail = close(got, recomputed, f"vs the scores with {how}, the {n} sinks' columns after the mask's {T}")
    return Fit(fits, f"the sinks' mask columns are at the wrong end: your {s.name(check.out)} is masked with the {n} "
               f"always-allowed columns after the {T} positions' while the sinks' keys come first, so the mask is {n} "
               f"columns off (every query sees the last {n} positions and not the {n} ending at its own) ({detail})"
               if fits else detail)


SINKS_MASKED_BEHIND = BugForm("attention sinks' mask columns at the wrong end", "the masked scores vs the scores "
                              "masked with the sinks' columns after the positions'", _sinks_masked_behind)
