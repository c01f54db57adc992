"""Rotary positions read once per run (checks/rotary.py): where a captured context is not the attention of the captured
queries and keys as they are but is that of them rotated by a member of the rotary family, the rotated queries and keys
join the run's tensors under ``ROTATED`` names, so that every check rebuilding the scores, the probabilities or the
context from them — and every step derived from them — reads what the attention read. The fit is made from the
context, the one step a rotation cannot hide, so a bug after the rotation (the scale left out, the heads merged
without moving the axis back) is still named at its own step. It is asked for only where an attention check found
no plain form on the queries and keys as captured (``plain_form_missed``): a run whose attention checks pass is judged
once, and never fitted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformer_trace.checks import CheckResult
from transformer_trace.checks.rotary import ROTATED, Rotary, fit_rotary, rotated_like
from transformer_trace.sources import TensorDict


def with_rotary(pages: list[Any], source: TensorDict, dims: Mapping[str, int]) -> tuple[TensorDict, dict[str, Rotary]]:
    """``source`` with the rotated queries and keys of each attention whose captured context fits a rotary member, and
    that member by the record names of the queries and keys (what the checks' messages say)."""
    tensors, found = dict(source.tensors), {}
    for page in pages:
        if not page.captured:
            continue
        for check in getattr(page.snap, "checks", ()):
            q, k = getattr(check, "q", None), getattr(check, "k", None)
            v, out = getattr(check, "v_heads", getattr(check, "v", None)), getattr(check, "out", None)
            if q is None or k is None or v is None or out is None:
                continue
            names = [source.name(ref) for ref in (q, k, v, out)]
            if names[0] in found or not all(name in tensors for name in names):
                continue
            context = source.t(out)
            heads = context.shape[1] if context.dim() == 4 else source.t(q).shape[1] if source.t(q).dim() == 4 \
                else dims.get("h")
            if not heads:
                continue
            try:
                rotary = fit_rotary(source.t(q), source.t(k), source.t(v), context, heads)
            except (RuntimeError, ValueError):  # shapes that do not split into these heads
                continue
            if rotary is not None:
                for name in names[:2]:
                    tensors[name + ROTATED], found[name] = rotated_like(source.t(name), rotary, heads), rotary
    return (source.with_tensors(tensors) if found else source), found


def plain_form_missed(pages: list[Any], results: Mapping[int, list[CheckResult]]) -> bool:
    """Whether an attention check (one that reads the queries and keys: the scores', the probabilities', the
    context's) failed or was unrecognised on a captured page with the queries and keys as captured: only there can
    rotary positions be the form it missed, so only then is a rotation fitted (``with_rotary``)."""
    return any(result.checkable and not result.passed for page in pages if page.captured
               and any(getattr(check, "q", None) is not None and getattr(check, "k", None) is not None
                       for check in getattr(page.snap, "checks", ()))
               for result in results[page.snap.number])


def rotary_note(read: list[str], labels: Mapping[str, Any]) -> str:
    """What a check that read rotated queries or keys says of them ("" where it read none): ``labels`` holds, under
    each rotated name, the member fitted (``with_rotary``'s caller files it there)."""
    rotated = [labels[name + ROTATED] for name in read if name + ROTATED in labels]
    return (f"the queries and keys rotated before the product: {rotated[0]}, fitted from the captured context"
            if rotated else "")
