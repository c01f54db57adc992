"""What a class page says, counted from the students' snapshots.json: per snapshot how many students' tensors were
captured, passed, failed, were unrecognised or not checkable; the failures most students hit, with who hit them; each
student's first failure. Every verdict is read through transformer_trace.trace.verdicts, the one place that knows how
it is stored."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from transformer_trace.classroom.students import Student
from transformer_trace.trace.verdicts import (FAILED, NOT_CHECKABLE, PASSED, UNRECOGNISED, VERDICTS,
                                              check_text, diagnosis, exit_status, first_failure_label,
                                              marked_at, script_failed, verdict, what_is_wrong)


STATUSES = ("passed", "failed", "script failed", "no report")  # a student's: exit status 0, 1, 2, or no report


def link(target: Path, page_folder: Path) -> str:
    """The relative URL, in the built site, from the class page (OUT/index.md, served as OUT/) to a student's page
    (x/index.md -> x/, x/page.md -> x/page/: MkDocs' directory URLs, since links in raw HTML are not rewritten), each
    path segment percent-encoded (a student's folder name is data: it never becomes markup or a different path)."""
    parts = list(Path(os.path.relpath(target.resolve(), page_folder.resolve())).parts)
    if parts[-1] == "index.md":
        parts[-1] = ""
    elif parts[-1].endswith(".md"):
        parts[-1] = parts[-1].removesuffix(".md") + "/"
    return "/".join(quote(part, safe="") for part in parts[:-1]) + "/" + parts[-1] if len(parts) > 1 else parts[-1]


@dataclass
class SnapshotRow:
    catalogue: str
    label: str
    title: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))
    first_of: int = 0  # students whose first failure (pipeline order) it is

    @property
    def captured(self) -> int:
        return sum(self.counts[v] for v in (PASSED, FAILED, UNRECOGNISED, NOT_CHECKABLE))


@dataclass
class FailureGroup:
    """Students whose check of one snapshot failed the same way: the same evidence (``wrong``: the bug form or broken
    property in a few words), or where the failure has none (""), the same check (its name is ``message``). A failed
    claim is said in each student's own names (``the heads of attn_ctx (S14) merged back``), so students with one bug
    form may differ in it: ``message`` is then "" and the bug form alone says what is wrong."""

    catalogue: str
    label: str
    title: str
    message: str
    wrong: str
    students: list[dict[str, str]] = field(default_factory=list)  # name, link to their failed page, "first" or ""
    first_of: int = 0


@dataclass
class StudentRow:
    name: str
    link: str | None  # their report's overview, None when there is none
    catalogue: str
    counts: dict[str, int]
    status: str  # passed / failed / script failed / no report
    first_failure: dict[str, str] | None  # label, title, message, detail, where (marked at), link
    problem: str  # the script's error, or why there is no report
    cells: dict[str, str]  # label -> verdict, for the heat map


def student_row(student: Student, page_folder: Path) -> StudentRow:
    if student.folder is None:
        return StudentRow(student.name, None, "", dict.fromkeys(VERDICTS, 0), "no report", None, student.missing, {})
    data = student.data
    snapshots = data["snapshots"]
    cells = {s["label"]: verdict(s) for s in snapshots}
    counts = {v: sum(c == v for c in cells.values()) for v in VERDICTS}
    first = first_failure_label(data)
    first_failure = None
    if first is not None:
        snap = next(s for s in snapshots if s["label"] == first)
        message, detail = check_text(snap)
        message = f"{diagnosis(snap)} ({message})" if diagnosis(snap) else message  # what is wrong, first
        first_failure = {"label": first, "title": snap["title"], "message": message, "detail": detail,
                         "where": marked_at(snap), "link": link(student.folder / snap["page"], page_folder)}
    code = exit_status(data)
    status = {0: "passed", 1: "failed", 2: "script failed"}[code]
    return StudentRow(student.name, link(student.folder / "index.md", page_folder), str(data.get("catalogue", "")),
                      counts, status, first_failure, script_failed(data) or "", cells)


def tally(students: list[Student], page_folder: Path) -> dict[str, Any]:
    """Everything the class page shows, as plain data (also written as class.json)."""
    rows = [student_row(s, page_folder) for s in students]
    snapshot_rows: dict[tuple[str, str], SnapshotRow] = {}
    groups: dict[tuple[str, str, str], FailureGroup] = {}
    for student, row in zip(students, rows):
        if student.folder is None:
            continue
        for snap in student.data.get("snapshots", []):
            key = (row.catalogue, snap["label"])
            found = snapshot_rows.setdefault(key, SnapshotRow(row.catalogue, snap["label"], snap["title"]))
            found.counts[row.cells[snap["label"]]] += 1
            first = row.first_failure is not None and row.first_failure["label"] == snap["label"]
            found.first_of += first
            if row.cells[snap["label"]] == FAILED:
                message, wrong = check_text(snap)[0], what_is_wrong(snap)
                group = groups.setdefault((*key, wrong or message),
                                          FailureGroup(row.catalogue, snap["label"], snap["title"], message, wrong))
                group.message = group.message if group.message == message else ""
                group.students.append({"name": row.name, "link": link(student.folder / snap["page"], page_folder),
                                       "first": "first" if first else ""})
                group.first_of += first
    catalogues = list(dict.fromkeys(r.catalogue for r in rows if r.catalogue))
    return {
        "students": rows,
        "catalogues": [{"key": key, "snapshots": [r for r in snapshot_rows.values() if r.catalogue == key],
                        "students": [r for r in rows if r.catalogue == key]} for key in catalogues],
        "failures": sorted(groups.values(), key=lambda g: (-len(g.students), -g.first_of, g.catalogue, g.label)),
        "totals": {status: sum(r.status == status for r in rows) for status in STATUSES},
    }


def as_json(found: dict[str, Any]) -> dict[str, Any]:
    """class.json: the counts of the page, for scripts (the gradebook)."""
    return {
        "totals": found["totals"],
        "students": [{"name": r.name, "catalogue": r.catalogue, "status": r.status, "counts": r.counts,
                      "first_failure": r.first_failure and {k: r.first_failure[k]
                                                             for k in ("label", "title", "message", "where")},
                      "problem": r.problem, "report": r.link} for r in found["students"]],
        "snapshots": [{"catalogue": r.catalogue, "label": r.label, "title": r.title, "captured": r.captured,
                       **{v: r.counts[v] for v in VERDICTS}, "first_failure_of": r.first_of}
                      for c in found["catalogues"] for r in c["snapshots"]],
        "failures": [{"catalogue": g.catalogue, "label": g.label, "what is wrong": g.wrong, "message": g.message,
                      "students": [s["name"] for s in g.students],
                      "first_failure_of": g.first_of} for g in found["failures"]],
    }
