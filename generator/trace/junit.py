"""`trace --junit FILE`: the trace as a JUnit XML report, the format CI systems show as test results (GitHub Actions'
test-report actions, GitLab's `artifacts:reports:junit`). One test case per catalogue snapshot: a failure carries the
check's diagnosis (what is wrong), its name and the marked statement's file:line, and the first failing snapshot
(pipeline order) is marked so; a snapshot not captured, captured but not checkable, or unrecognised (a step matching
no form its check knows: not a bug) is skipped with the reason ("unrecognised: ..." for the last, counted in the
suite's "unrecognised" property). A script that failed adds one test case with an error.

The layout is the common one both read (Jenkins' junit-10.xsd): testsuites > testsuite > testcase, with failure /
skipped / error children whose `message` attribute holds the reason, and the counts (tests, failures, errors; skipped
on the suite only, as the schema has it) equal to what the test cases hold. The suite is named by the student
(``--student``, default the report's name) and every classname starts with it, so a class's files merged into one still
tell students apart; ``file`` and ``line`` are relative to the repository's top level (or ``--junit-root``), as CI
annotations read them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
import xml.etree.ElementTree as ET
from pathlib import Path
from transformer_trace.trace.verdicts import (FAILED, NOT_CAPTURED, NOT_CHECKABLE, UNRECOGNISED, ErrorPlace,
                                              SnapshotRecord, SourceRecord, TraceRecord, check_text, diagnosis,
                                              first_failure_label, marker_line, script_failed, trace_title, verdict)

FIRST_FAILURE = "first failure (pipeline order)"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")  # characters XML 1.0 cannot hold at all


@dataclass(frozen=True)
class Whose:
    """Whose trace a JUnit file reports and where its files are, so that a class's files merged into one (CI tools
    concatenate the testsuites) still tell students apart and CI annotations point at the right file.

    ``student``: the suite's name and the first part of every test case's classname. ``script``: the traced script or
    notebook (absolute); the snapshots' source paths are relative to its folder. ``root``: the folder the ``file``
    attributes are relative to (the repository's top level, as CI tools read them)."""

    student: str
    script: Path
    root: Path

    def file(self, recorded: str) -> str:
        """A source path of snapshots.json (relative to the script's folder) as relative to the root."""
        path = Path(os.path.normpath(self.script.parent / recorded))  # a module beside it: ../lib/x.py
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:  # outside the repository: as recorded, the best a CI annotation can do
            return Path(recorded).as_posix()


def repository_root(script: Path) -> Path:
    """The top level of the git work tree holding ``script`` (the folder with .git, as git finds it), else the current
    folder when it holds the script, else the script's own folder."""
    for folder in script.resolve().parents:
        if (folder / ".git").exists():
            return folder
    here = Path.cwd().resolve()
    return here if here in script.resolve().parents else script.resolve().parent


def _text(value: object) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _where(snapshot: SnapshotRecord, whose: Whose) -> tuple[str | None, int | None, str]:
    """The marker of a snapshot as the ``file`` and ``line`` attributes and as text: ``model.py:49``, the line of its
    breakpoint comment (``source.marker_line``), as the terminal's "marked at" and the page's *Marked at* row say it,
    not the statement it captured (a comment on its own line marks the one above it); a notebook's: its file, no line,
    and "vit.ipynb, cell 7, line 3" (the line of the script it ran as means nothing to CI)."""
    source: SourceRecord = snapshot.get("source") or {}
    if not source.get("path"):
        return None, None, ""
    file = whose.file(source["path"])
    if source.get("location"):
        return file, None, f"{file} ({source['location']})" if source["location"] != file else file
    line = marker_line(source)
    return file, line, f"{file}:{line}" if line else file


def testcase(data: TraceRecord, snapshot: SnapshotRecord, first: str | None, whose: Whose) -> ET.Element:
    case = ET.Element("testcase", {"classname": _text(f"{whose.student}.{snapshot.get('stage', 'trace')}"),
                                   "name": _text(f"{snapshot['label']} {snapshot['title']}"), "time": "0"})
    file, line, where = _where(snapshot, whose)
    if file:
        case.set("file", _text(file))
    if line:
        case.set("line", str(line))
    name, detail = check_text(snapshot)
    found = verdict(snapshot)
    if found == FAILED:
        mark = f"{FIRST_FAILURE}: " if snapshot["label"] == first else ""
        wrong = diagnosis(snapshot)  # what is wrong first, then the claim and where
        said = f"{wrong} ({name})" if wrong else (detail or name)
        at = f" at {where}" if where else ""
        message = f"{mark}{snapshot['label']}{at}: {said}"
        failure = ET.SubElement(case, "failure", {"message": _text(message), "type": "check failed"})
        failure.text = _text(f"{message}\n{snapshot['label']} {snapshot['title']}: expected: {name}\n{detail}"
                             + (f"\nmarked at {where}" if where else ""))
    elif found == UNRECOGNISED:
        ET.SubElement(case, "skipped", {"message": _text(f"unrecognised: {name} — "
                                                         f"{detail.removeprefix('unrecognised: ')}")})
    elif found == NOT_CHECKABLE:
        ET.SubElement(case, "skipped", {"message": _text(f"not checkable: {detail or name}")})
    elif found == NOT_CAPTURED:
        ET.SubElement(case, "skipped", {"message": _text(f"not captured: no marker for {snapshot['label']} ran")})
    return case


def _error_case(whose: Whose, name: str, kind: str, why: str, raised: ErrorPlace | None = None) -> ET.Element:
    """A test case with an error: the script that failed (``raised``: where in the student's code, the ``file`` and
    ``line`` CI annotates, and said first in the message), or a refusal (the script's file, no line)."""
    case = ET.Element("testcase", {"classname": _text(f"{whose.student}.script"), "name": _text(name), "time": "0"})
    if raised and raised.get("path"):
        file = whose.file(raised["path"])
        case.set("file", _text(file))
        if raised.get("line"):
            case.set("line", str(raised["line"]))
        where = (f"{file} ({raised['location']})" if raised.get("location")
                 else f"{file}:{raised['line']}" if raised.get("line") else file)
        why = f"{why}; raised at {where}, the traceback's last line in the student's code"
    elif whose.script.exists():
        case.set("file", _text(whose.file(whose.script.name)))
    ET.SubElement(case, "error", {"message": _text(why), "type": kind}).text = _text(why)
    return case


def count_unrecognised(cases: list[ET.Element]) -> int:
    """The test cases skipped as unrecognised (a step matching no form its check knows: not a bug)."""
    return sum((skipped := case.find("skipped")) is not None
               and skipped.get("message", "").startswith("unrecognised:") for case in cases)


def _document(cases: list[ET.Element], whose: Whose, title: str, properties: dict[str, str]) -> ET.ElementTree:
    """testsuites > one testsuite named by the student, with the counts the test cases hold."""
    def count(kind: str) -> int:
        return sum(case.find(kind) is not None for case in cases)

    counts = {"tests": len(cases), "failures": count("failure"), "errors": count("error")}
    attributes = {key: str(value) for key, value in counts.items()}
    # the schema (Jenkins' junit-10.xsd) has no skipped count on testsuites: only on the suite
    root = ET.Element("testsuites", {"name": _text(f"{whose.student}: {title}"), **attributes, "time": "0"})
    suite = ET.SubElement(root, "testsuite", {"name": _text(whose.student), **attributes,
                                              "skipped": str(count("skipped")), "time": "0"})
    listed = ET.SubElement(suite, "properties")
    for key, value in {"student": whose.student, **properties}.items():
        ET.SubElement(listed, "property", {"name": key, "value": _text(value)})
    ET.SubElement(listed, "property", {"name": "unrecognised", "value": str(count_unrecognised(cases))})
    suite.extend(cases)
    ET.indent(root)
    return ET.ElementTree(root)


def junit_tree(data: TraceRecord, whose: Whose) -> ET.ElementTree:
    """The JUnit document of one trace, from its snapshots.json."""
    first = first_failure_label(data)
    cases = [testcase(data, snapshot, first, whose) for snapshot in data.get("snapshots", [])]
    stopped = script_failed(data)
    if stopped:
        raised = (data.get("outcome") or {}).get("error_at")
        cases.append(_error_case(whose, "the script ran to its end", "script failed", stopped, raised))
    script = (data.get("inputs") or {}).get("script")
    properties = {"script": whose.file(str(script)), "catalogue": str(data.get("catalogue"))} if script else {}
    return _document(cases, whose, str(data.get("title", data["model"])), properties)


def refusal_tree(whose: Whose, why: str, kind: str = "bad input") -> ET.ElementTree:
    """The JUnit document of a trace that never wrote its report (bad input, an internal error): one test case whose
    error says why, so that CI shows this student too."""
    case = _error_case(whose, f"trace {whose.script.name}", kind, why)
    return _document([case], whose, trace_title(whose.script.name), {"script": whose.file(whose.script.name)})


def write_junit(tree: ET.ElementTree, target: Path) -> None:
    """Write the JUnit file through a temporary file renamed into place (a failed write leaves the old one), making
    its missing folders as --out's are made."""
    from transformer_trace.docs_folder.new_folders import make_folders

    make_folders(target.parent, "--junit")
    tmp = target.with_name(f".{target.name}.tmp")
    tree.write(tmp, encoding="UTF-8", xml_declaration=True)
    tmp.replace(target)


def check_target(target: Path) -> None:
    """Refuse a --junit path that cannot be written (before anything runs)."""
    from transformer_trace.errors import UserError

    if target.is_dir():
        raise UserError(f"--junit {target}: is a folder; give the XML file to write")
    if not target.parent.is_dir():  # made when the file is written, where it safely can be
        from transformer_trace.docs_folder.new_folders import check_makeable

        check_makeable(target.parent, "--junit")
    if target.exists() and not _is_junit_report(target):  # the script, mkdocs.yml: a file of the user's stays theirs
        raise UserError(f"--junit {target}: is a file that is not a JUnit report; give a new file name")


def _is_junit_report(path: Path) -> bool:
    """Whether ``path`` holds a JUnit report (one an earlier --junit wrote may be replaced)."""
    try:
        with path.open("rb") as file:
            head = file.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"<?xml") and b"<testsuites" in head
