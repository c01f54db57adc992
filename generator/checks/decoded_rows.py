"""A decoder's output decoded one new row per call (alex-matton/causal-transformer-decoder's): the last layer's new
row joined to a cache of its outputs for the earlier positions. In sequence order the rows computed this call are the
newest positions, so they come last: the cached rows before them. Rows of the cache after the new ones put an earlier
position after a later one: named, where the new rows open the output."""

from __future__ import annotations

from typing import Any

from transformer_trace.checks.evidence import Fit
from transformer_trace.sources import TensorSource
from transformer_trace.trace.reading.extra_tokens import rows_joined


def new_rows_first(check: Any, s: TensorSource) -> Fit | None:
    """The decoded output with the new rows first and the cache after them (``torch.cat([new, cache])``)."""
    out, source = s.t(check.out), s.t(check.source)
    start = rows_joined(out, source) if getattr(check, "newest_last", False) else None
    if start is None:
        return None
    new, count = source.shape[1], out.shape[1] - source.shape[1]
    if start != new:
        return Fit(False, f"the cached rows begin at row {start}, not after the new rows")
    return Fit(True, f"your {s.name(check.out)} puts the {new} new row(s) ({s.name(check.source)}) first and the "
                     f"{count} cached rows of the earlier positions after them: the positions out of order (the "
                     "newest comes last)")
