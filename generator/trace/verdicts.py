"""A traced snapshot's verdict and the trace's exit status, read from the snapshots.json a trace writes: the one place
that knows how a check's outcome is stored there (the JUnit file and the class page read it through these functions)."""

from __future__ import annotations

from typing import TypedDict

PASSED, FAILED, NOT_CHECKABLE, NOT_CAPTURED = "passed", "failed", "not checkable", "not captured"
# failed without evidence (generator/checks/evidence.py): a form the checks do not know, not a bug
UNRECOGNISED = "unrecognised"
VERDICTS = (PASSED, FAILED, UNRECOGNISED, NOT_CHECKABLE, NOT_CAPTURED)

EXIT_PASSED, EXIT_FAILED, EXIT_ERROR = 0, 1, 2  # as pytest tells its outcomes apart: 2 = bad input or the script failed


def trace_title(script_name: str) -> str:
    """A trace's title, "Trace of model.py": its report's, and its JUnit file's where the trace was refused too."""
    return f"Trace of {script_name}"


# What a trace's snapshots.json holds, as its readers (this module, the JUnit file, the class page) read it; the writer
# is generator/snapshots_file.py. total=False: an entry holds the keys its case has (a snapshot not captured no check).
class EvidenceRecord(TypedDict, total=False):
    name: str  # the bug form that fitted or the property broken, in a few words ("1/√d missing")
    message: str  # the property broken or the bug form that fitted


class CheckRecord(TypedDict, total=False):
    name: str
    detail: str  # why it failed or was not checkable
    status: str  # "unrecognised": failed without evidence
    passed: bool | None
    evidence: EvidenceRecord


class SourceRecord(TypedDict, total=False):
    path: str  # the marked file
    line: int  # the statement captured
    marker_line: int  # its breakpoint comment: where the trace says it was marked
    location: str  # a notebook's: "vit.ipynb, cell 7, line 3"


class SnapshotRecord(TypedDict, total=False):
    label: str  # "S13"
    title: str
    page: str  # its page's file in the report folder
    stage: str
    captured: bool
    passed: bool | None
    check: CheckRecord
    source: SourceRecord


class ErrorPlace(TypedDict, total=False):
    path: str  # the file of the student's code the script's error was raised in, relative to the script's folder
    line: int
    location: str  # a notebook's: "vit.ipynb, cell 7, line 3"


class OutcomeRecord(TypedDict, total=False):
    error: str | None
    error_at: ErrorPlace | None  # where the error was raised in the student's code (absent: not known)
    timed_out: bool
    timeout: float | None
    first_failure: str | None  # "S13 Attention scores: ..."


class TraceRecord(TypedDict, total=False):
    model: str
    title: str
    catalogue: str
    inputs: dict[str, object]
    snapshots: list[SnapshotRecord]
    outcome: OutcomeRecord


def verdict(snapshot: SnapshotRecord) -> str:
    """passed / failed / unrecognised / not checkable / not captured, for one entry of snapshots.json's
    "snapshots"."""
    if not snapshot.get("captured"):
        return NOT_CAPTURED
    check: CheckRecord = snapshot.get("check") or {}
    if check.get("status") == UNRECOGNISED:
        return UNRECOGNISED
    passed = snapshot["passed"] if "passed" in snapshot else check.get("passed")
    return PASSED if passed is True else FAILED if passed is False else NOT_CHECKABLE


def diagnosis(snapshot: SnapshotRecord) -> str:
    """What a failure's evidence says is wrong (the property broken or the bug form that fitted), "" where none."""
    check: CheckRecord = snapshot.get("check") or {}
    evidence: EvidenceRecord = check.get("evidence") or {}
    return str(evidence.get("message") or "")


def marker_line(source: SourceRecord) -> int | None:
    """The line of a snapshot's breakpoint comment, where the trace says it was marked (a file written before marker
    lines were recorded: the statement's)."""
    return source.get("marker_line") or source.get("line")


def marked_at(snapshot: SnapshotRecord) -> str:
    """Where a snapshot was marked, as the terminal and its page say it, relative to the traced script's folder:
    "model.py:49", a notebook's "vit.ipynb, cell 7, line 3"; "" where it was not captured."""
    source: SourceRecord = snapshot.get("source") or {}
    if not source.get("path"):
        return ""
    if source.get("location"):
        return source["location"]
    line = marker_line(source)
    return f"{source['path']}:{line}" if line else source["path"]


def what_is_wrong(snapshot: SnapshotRecord) -> str:
    """A failure's evidence in a few words, the same for every student with that bug ("1/√d missing"): what the
    class page groups failures by; "" where the failure has no evidence."""
    check: CheckRecord = snapshot.get("check") or {}
    evidence: EvidenceRecord = check.get("evidence") or {}
    return str(evidence.get("name") or "")


def check_text(snapshot: SnapshotRecord) -> tuple[str, str]:
    """The check's name and what it found (why it was not checkable, or why it failed)."""
    check: CheckRecord = snapshot.get("check") or {}
    return str(check.get("name") or ""), str(check.get("detail") or "")


def script_failed(data: TraceRecord) -> str | None:
    """Why the traced script did not run to its end (an exception, --timeout), or None when it did."""
    outcome: OutcomeRecord = data.get("outcome") or {}
    if outcome.get("error"):
        return str(outcome["error"])
    if outcome.get("timed_out"):
        return f"the script ran past --timeout {outcome.get('timeout')} s"
    return None


def first_failure_label(data: TraceRecord) -> str | None:
    """The label of the first failing snapshot in pipeline order ("S13"), as the overview names it."""
    outcome: OutcomeRecord = data.get("outcome") or {}
    named = outcome.get("first_failure")
    failed = [s["label"] for s in data.get("snapshots", []) if verdict(s) == FAILED]
    if named:
        return next((label for label in failed if named.startswith(f"{label} ")), failed[0] if failed else None)
    return failed[0] if failed else None


def exit_status(data: TraceRecord) -> int:
    """0 when no check failed (passed, unrecognised or not checkable: an unrecognised step is a form the checks do
    not know, not a bug), 1 when a check failed with evidence, 2 when the script failed (error, --timeout)."""
    if script_failed(data):
        return EXIT_ERROR
    return EXIT_FAILED if any(verdict(s) == FAILED for s in data.get("snapshots", [])) else EXIT_PASSED
