"""`trace --junit FILE`: the trace as a JUnit XML report, the format CI systems show as test results (GitHub Actions'
test-report actions, GitLab's `artifacts:reports:junit`). One test case per catalogue snapshot: a failure carries the
check's diagnosis (what is wrong), its name and the marked statement's file:line, and the first failing snapshot
(pipeline order) is marked so; a snapshot not captured, captured but not checkable, or unrecognised (a step matching
no form its check knows: not a bug) is skipped with the reason ("unrecognised: ..." for the last, counted in the
suite's "unrecognised" property). A script that failed adds one test case with an error.

The layout is the common one both read (the Jenkins/Surefire schema): testsuites > testsuite > testcase, with
failure / skipped / error children whose `message` attribute holds the one-line reason, and the counts (tests,
failures, errors, skipped) on the suite and on the root equal to what the test cases hold."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from transformer_trace.trace.verdicts import (FAILED, NOT_CAPTURED, NOT_CHECKABLE, UNRECOGNISED, check_text, diagnosis,
                                      first_failure_label, script_failed, verdict)

FIRST_FAILURE = "first failure (pipeline order)"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")  # characters XML 1.0 cannot hold at all


def _text(value: Any) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def testcase(data: dict[str, Any], snapshot: dict[str, Any], first: str | None) -> ET.Element:
    case = ET.Element("testcase", {"classname": _text(f"{data['model']}.{snapshot.get('stage', 'trace')}"),
                                   "name": _text(f"{snapshot['label']} {snapshot['title']}"), "time": "0"})
    source = snapshot.get("source") or {}
    if source.get("path"):
        case.set("file", _text(source["path"]))
    name, detail = check_text(snapshot)
    found = verdict(snapshot)
    if found == FAILED:
        mark = f"{FIRST_FAILURE}: " if snapshot["label"] == first else ""
        at = _marked_at(source)
        wrong = diagnosis(snapshot)  # what is wrong first, then the claim and where
        said = f"{wrong} ({name})" if wrong else name
        failure = ET.SubElement(case, "failure", {"message": _text(f"{mark}{said}" + (f" — {at}" if at else "")),
                                                  "type": "check failed"})
        where = f"\nmarked at {source.get('location') or source['path']}" if source else ""
        failure.text = _text(f"{mark}{snapshot['label']} {snapshot['title']}: {said}\n{detail}{where}")
    elif found == UNRECOGNISED:
        ET.SubElement(case, "skipped", {"message": _text(f"unrecognised: {name} — "
                                                         f"{detail.removeprefix('unrecognised: ')}")})
    elif found == NOT_CHECKABLE:
        ET.SubElement(case, "skipped", {"message": _text(f"not checkable: {detail or name}")})
    elif found == NOT_CAPTURED:
        ET.SubElement(case, "skipped", {"message": _text(f"not captured: no marker for {snapshot['label']} ran")})
    return case


def _marked_at(source: dict[str, Any]) -> str:
    """The marked statement's file:line (a notebook's cell and line), "" where unknown."""
    if source.get("location"):
        return f"marked at {source['location']}"
    return f"marked at {source['path']}:{source['line']}" if source.get("path") and source.get("line") else ""


def junit_tree(data: dict[str, Any]) -> ET.ElementTree:
    """The JUnit document of one trace, from its snapshots.json."""
    first = first_failure_label(data)
    cases = [testcase(data, snapshot, first) for snapshot in data.get("snapshots", [])]
    stopped = script_failed(data)
    if stopped:
        case = ET.Element("testcase", {"classname": _text(f"{data['model']}.script"),
                                       "name": "the script ran to its end", "time": "0"})
        ET.SubElement(case, "error", {"message": _text(stopped), "type": "script failed"}).text = _text(stopped)
        cases.append(case)
    def count(kind: str) -> int:
        return sum(case.find(kind) is not None for case in cases)

    counts = {"tests": len(cases), "failures": count("failure"), "errors": count("error"), "skipped": count("skipped")}
    attributes = {key: str(value) for key, value in counts.items()}
    root = ET.Element("testsuites", {"name": _text(data.get("title", data["model"])), **attributes, "time": "0"})
    suite = ET.SubElement(root, "testsuite", {"name": _text(data["model"]), **attributes, "time": "0"})
    script = (data.get("inputs") or {}).get("script")
    if script:
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", {"name": "script", "value": _text(script)})
        ET.SubElement(properties, "property", {"name": "catalogue", "value": _text(data.get("catalogue"))})
        unrecognised = sum(verdict(snapshot) == UNRECOGNISED for snapshot in data.get("snapshots", []))
        ET.SubElement(properties, "property", {"name": "unrecognised", "value": str(unrecognised)})
    suite.extend(cases)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(data: dict[str, Any], target: Path) -> None:
    """Write the JUnit file through a temporary file renamed into place: a failed write leaves the old one."""
    tmp = target.with_name(f".{target.name}.tmp")
    junit_tree(data).write(tmp, encoding="UTF-8", xml_declaration=True)
    tmp.replace(target)


def check_target(target: Path) -> None:
    """Refuse a --junit path that cannot be written (before anything runs)."""
    from transformer_trace.errors import UserError

    if target.is_dir():
        raise UserError(f"--junit {target}: is a folder; give the XML file to write")
    if not target.parent.is_dir():
        raise UserError(f"--junit {target}: the folder {target.parent} does not exist")
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
