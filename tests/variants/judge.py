"""Trace a variant and read its verdicts: the script run in its own interpreter and the catalogue's checks judged on
the capture, exactly as `trace` does (generator/trace/__init__.py ``_trace``: scan, run_script, the capture's one
reading, the run it becomes judged: trace/report.py ``reading_run``, checking.py ``judge``), without writing the
report's pages and figures, which cost more than the checks and change no verdict.
tests/test_trace_variants.py holds this to what `trace` writes in snapshots.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from transformer_trace.checks import FAILED, NOT_CHECKABLE, PASSED, UNRECOGNISED
from transformer_trace.reports import REPORTS
from transformer_trace.trace import as_traced, choose_numbering, numberings
from transformer_trace.trace.markers import scan
from transformer_trace.trace.notebook import to_script, write_beside
from transformer_trace.trace.reading.capture import run_script
from transformer_trace.trace.reading.capture_reading import read
from transformer_trace.trace.reading import checking
from transformer_trace.trace.report import reading_run
from transformer_trace.trace.reading.user_files import user_files


@dataclass(frozen=True)
class Verdict:
    label: str
    status: str  # passed, failed, unrecognised, not checkable
    form: str  # the evidence's name of a failure ("" otherwise)
    detail: str


@dataclass(frozen=True)
class Judged:
    error: str | None  # the script's own error, if it failed
    verdicts: tuple[Verdict, ...]  # the captured snapshots', in the catalogue's order

    def with_status(self, status: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == status]

    @property
    def first_failure(self) -> Verdict | None:
        """The first failing snapshot in the model's data flow: the catalogue's order, as the overview names it."""
        failed = self.with_status(FAILED)
        return failed[0] if failed else None

    def counts(self) -> dict[str, int]:
        return {status: len(self.with_status(status)) for status in (PASSED, FAILED, UNRECOGNISED, NOT_CHECKABLE)}


def judge(path: Path) -> Judged:
    """Trace the script or notebook at ``path`` (its markers' numbering chosen as `trace` chooses it, --hit 1)."""
    if path.suffix == ".ipynb":
        script = write_beside(to_script(path))
        try:
            return judge(script)
        finally:
            script.unlink(missing_ok=True)
    script = path.resolve()
    markers = scan(user_files(script), numberings(REPORTS))
    numbering = choose_numbering("auto", markers, script, REPORTS)
    markers, reads = as_traced(markers, numbering, REPORTS)
    capture = run_script(script, [], markers, timeout=120, **reads)
    catalogue = REPORTS[numbering]
    reading = read(catalogue, numbering, capture, 1)
    readings = reading.snapshots
    judged = checking.judge(reading_run(reading, ""), reading)
    verdicts = []
    for reading in sorted((r for r in readings if r.captured), key=lambda r: r.snap.number):
        verdict = judged[reading.snap.number].verdict
        verdicts.append(Verdict(reading.label, verdict.status, verdict.evidence.name if verdict.evidence else "",
                                verdict.detail))
    return Judged(capture.error, tuple(verdicts))
