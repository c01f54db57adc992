"""The students of a class page: one traced report each, found from the paths the instructor gives (a report folder,
a folder holding one report, or a snapshots.json file). A student's name is the folder name given: data, never
markup."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from transformer_trace.errors import UserError
from transformer_trace.trace.verdicts import TraceRecord

SNAPSHOTS = "snapshots.json"
SNAPSHOT_KEYS = ("label", "title", "page")  # what the class page reads of every snapshot


@dataclass
class Student:
    name: str  # the folder name given (data: escaped wherever it is shown)
    folder: Path | None  # the folder of the student's traced report (its index.md), None when there is no report
    data: TraceRecord = field(default_factory=lambda: TraceRecord())  # the report's snapshots.json
    missing: str = ""  # why there is no report (the trace never wrote one, or its file cannot be read)
    unreadable: str = ""  # a report file that is there but cannot be read: the one-line warning naming it


def _report_file(path: Path) -> Path | None:
    """The snapshots.json a path stands for: the file itself, the folder's own, or the one report inside the folder."""
    if path.is_file():
        return path
    if (path / SNAPSHOTS).is_file():
        return path / SNAPSHOTS
    inside = sorted(path.glob(f"*/{SNAPSHOTS}"))
    if len(inside) > 1:
        raise UserError(f"{path}: holds {len(inside)} reports ({', '.join(p.parent.name for p in inside[:3])}…); "
                        "give each student's report folder instead")
    return inside[0] if inside else None


def _name(path: Path) -> str:
    """The student's name: the folder given (the report's own folder when a snapshots.json file was given)."""
    if path.is_file():
        return path.resolve().parent.name
    return path.resolve().name or str(path)


def _refusal(folder: Path) -> str | None:
    """Why the trace wrote no report, as the JUnit file `trace --junit` wrote beside it says (its error), if any: a
    refusal of bad input said so; an internal error or a trace stopped (Ctrl-C, a CI job's timeout) as its message
    says it."""
    import xml.etree.ElementTree as ET

    for junit in sorted(folder.glob("*.xml"))[:5]:
        try:
            error = ET.parse(junit).getroot().find(".//testcase/error")
        except (ET.ParseError, OSError):
            continue
        if error is not None and error.get("message"):
            refused = error.get("type") == "bad input"
            return f"the trace was refused: {error.get('message')}" if refused else error.get("message")
    return None


def read_student(path: Path) -> Student:
    if not path.exists():
        raise UserError(f"{path}: there is no such report folder or snapshots.json")
    if path.is_file() and path.name != SNAPSHOTS:
        raise UserError(f"{path}: not a trace's {SNAPSHOTS}; give the student's report folder or its {SNAPSHOTS}")
    found = _report_file(path)
    name = _name(path)
    if found is None:  # the student's trace wrote nothing (its job failed before the report): a row that says so
        why = _refusal(path) if path.is_dir() else None
        return Student(name, None, missing=why or f"no {SNAPSHOTS} in the folder: the trace wrote no report")
    data, why = _read_report(found)
    if why:  # one student's broken file is that student's row, not the whole class refused
        return Student(name, None, missing=f"unreadable report: {found.name} {why}", unreadable=f"{found}: {why}")
    return Student(name, found.parent, data)


def _read_report(found: Path) -> tuple[TraceRecord, str]:
    """The trace's snapshots.json, or why ``found`` is not one a class page can read."""
    try:
        data = json.loads(found.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, OSError) as exc:
        return TraceRecord(), f"is not a trace's {SNAPSHOTS} ({type(exc).__name__}: {exc})"
    if not isinstance(data, dict) or not isinstance(data.get("snapshots"), list) or not data.get("traced"):
        return TraceRecord(), (f"is not a trace's {SNAPSHOTS} (a bundled report's, or another file); class pages "
                               "read the reports `python -m transformer_trace trace` writes")
    entries_whole = all(isinstance(s, dict) and all(isinstance(s.get(k), str) for k in SNAPSHOT_KEYS)
                        for s in data["snapshots"])
    if not entries_whole or not isinstance(data.get("outcome", {}), dict):
        return TraceRecord(), (f"is damaged: a snapshot lacks its {', '.join(SNAPSHOT_KEYS)}, or its outcome is not "
                               "an object")
    return cast(TraceRecord, data), ""  # its keys: read where they are used


def read_students(paths: list[Path]) -> list[Student]:
    """One student per path, in name order; a name given twice is told apart by its path."""
    students = [read_student(path) for path in paths]
    counts: dict[str, int] = {}
    for student in students:
        counts[student.name] = counts.get(student.name, 0) + 1
    for student, path in zip(students, paths):
        if counts[student.name] > 1:
            student.name = str(path)
    return sorted(students, key=lambda s: s.name.casefold())
