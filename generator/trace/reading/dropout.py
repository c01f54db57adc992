"""A run traced in training mode (issue 40, point 5): where a step's dropout mask was read back from its tensors
(checks/dropout.py: a residual sum through an active dropout), the run is known to have dropout active, and a step no
known form matched there is not called unrecognised for the randomness: it is said to have run with dropout active
and not been compared exactly (a dropout on the attention weights inside the fused attention cannot be taken out of
its output). Failures with evidence stay failures: a bug form that fits is no randomness."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from transformer_trace.checks import NOT_CHECKABLE, CheckResult
from transformer_trace.checks.base import UNRECOGNISED
from transformer_trace.checks.dropout import DROPOUT_CLAIMS
from transformer_trace.sources import NotCheckable

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading


class DropoutActive(NotCheckable):
    """A step that ran with dropout active, its randomness not read back from its tensors."""


def said_dropout(readings: Sequence[SnapshotReading],
                 results: dict[int, list[CheckResult]]) -> dict[int, list[CheckResult]]:
    """Where some step was judged through an active dropout, each unrecognised result of the run is not checkable
    instead, saying so (by snapshot number, as ``results``)."""
    seen = [reading.label for reading in readings
            if reading.captured and any(_through_dropout(r) for r in results.get(reading.snap.number, ()))]
    if not seen:
        return results
    return {number: [_said(result, seen) for result in found] for number, found in results.items()}


def _through_dropout(result: CheckResult) -> bool:
    return (result.passed and result.name in DROPOUT_CLAIMS) or any(_through_dropout(part) for part in result.parts)


def _said(result: CheckResult, seen: list[str]) -> CheckResult:
    if result.parts:
        parts = [_said(part, seen) for part in result.parts]
        return result if parts == list(result.parts) else CheckResult.combined(parts, judge_checkable=True)
    if result.status != UNRECOGNISED:
        return result
    lack = DropoutActive(f"the run without dropout (its dropout was read back at {', '.join(seen)})",
                         "ran with dropout active; not compared exactly")
    return dataclasses.replace(result, status=NOT_CHECKABLE, passed=False, lacks=(lack,), missing=(lack.missing,),
                               detail=f"ran with dropout active (read back at {', '.join(seen)}); not compared "
                                      f"exactly: {result.detail.split(' — ', 1)[-1]}")
