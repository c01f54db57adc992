"""A cross-attention fed the wrong input, named at its first captured step: where a shared line's hits were told to be
the cross-attention's although the module running them was called with its key input equal to its query input
(shared_lines.py ``Told.misfed``: its name says cross-attention, or it is a decoder layer's second attention module),
its keys and values come from the decoder stream where the encoder output belongs. No captured tensor shows the keys'
projection (a fused key–value Linear, projections inside a helper call), so no check of the step's own can see it;
the call's arguments, compared in the script's interpreter, do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from transformer_trace.checks import CheckResult
from transformer_trace.checks.evidence import BUG_FORM, Evidence

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

K_OR_V_FROM_ANOTHER_INPUT = "K or V from another input"
CLAIM = "the cross-attention's keys and values come from the encoder output"


def misfed_named(readings: Sequence[SnapshotReading], results: dict[int, list[CheckResult]],
                 misfed: Mapping[int, str], dims: Mapping[str, int]) -> dict[int, list[CheckResult]]:
    """``results`` with the first captured step (in the catalogue's order) whose hits a misfed cross-attention ran
    failing with the bug form "K or V from another input"; the others as they were. ``dims``: the named dimensions
    the run bound (where the source and target lengths differ, a step over the keys shows how many it had)."""
    page = next((page for page in readings if page.captured and page.snap.number in misfed), None)
    if page is None:
        return results
    first = page.snap.number
    message = (f"K or V from another input: {misfed[first]} (the decoder stream), where the encoder output belongs: "
               "its keys and values were computed from the decoder, not from the encoder")
    keys, T, S = tuple(page.main.shown.shape)[-1:], dims.get("T"), dims.get("S")
    if page.named_shape[-1:] == ("S",) and T is not None and S is not None and T != S and keys == (T,):
        name = page.main.variable or page.main.name
        message += f" ({name}: {T} keys, the decoder's length T, where the encoder output's S = {S} belong)"
    found = CheckResult(name=CLAIM, passed=False, detail=message,
                        evidence=Evidence(BUG_FORM, K_OR_V_FROM_ANOTHER_INPUT, message))
    return {**results, first: [*results.get(first, []), found]}
