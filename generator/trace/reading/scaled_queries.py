"""Queries scaled where they are taken (CaiT's ``q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]``, marked as the
queries per head): the captured queries already hold the 1/√hs, so scores that are their product with the keys, with no
further scale, are Q·Kᵀ/√hs. A check that rebuilds the scores (or the probabilities, or the context) from the captured
queries finds them "1/√d missing"; the queries' own check (checks/calls.py ``HeadsOfRead``) proved them the projection
their line read × 1/√hs, so that verdict is what the scale's place made it: the scale applied at the queries. Where the
queries are not so proved (the scale really left out: the queries are the projection as read), the verdict stands."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from transformer_trace.checks import PASSED, CheckResult
from transformer_trace.checks.calls import QUERIES_SCALED_WHERE_TAKEN
from transformer_trace.sources import Ref

if TYPE_CHECKING:
    from transformer_trace.trace.reading.pages import SnapshotReading

MISSING_SCALE = "1/√d missing"  # the bug form of checks/attention.py's scores, probabilities and context checks


def _scaled_queries(readings: Sequence[SnapshotReading], results: dict[int, list[CheckResult]]) -> dict[Ref, str]:
    """The catalogue's references of the queries whose own check passed as scaled where they are taken, each with its
    step's label."""
    return {page.snap.tensors[0]: page.label for page in readings if page.captured and page.snap.tensors
            and any(result.passed and QUERIES_SCALED_WHERE_TAKEN in result.name
                    for result in results.get(page.snap.number, []))}


def queries_scaled_where_taken(readings: Sequence[SnapshotReading],
                               results: dict[int, list[CheckResult]]) -> dict[int, list[CheckResult]]:
    """``results`` with each "1/√d missing" of a check that reads queries proved scaled where they were taken turned
    into a pass that says where the scale is; the others as they were."""
    scaled = _scaled_queries(readings, results)
    if not scaled:
        return results
    turned = dict(results)
    for page in readings:
        reads = [scaled[q] for check in page.snap.checks if isinstance(q := getattr(check, "q", None), Ref)
                 and q in scaled]
        found = results.get(page.snap.number, [])
        if not reads or not any(r.evidence is not None and r.evidence.name == MISSING_SCALE for r in found):
            continue
        turned[page.snap.number] = [
            dataclasses.replace(r, passed=True, status=PASSED, evidence=None,
                                name=f"{r.name}, the 1/√hs applied where the queries are taken ({reads[0]})",
                                detail=f"the queries {reads[0]} already hold the 1/√hs (their check: the projection "
                                       f"their line read × 1/√hs), so their product with the keys, with no further "
                                       f"scale, is Q·Kᵀ/√hs {r.evidence.message.split(' scaling ', 1)[-1]}")
            if r.evidence is not None and r.evidence.name == MISSING_SCALE else r for r in found]
    return turned
