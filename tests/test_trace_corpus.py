"""`trace` on code nobody here wrote: real public implementations (tests/trace_corpus/<entry>/, each with its LICENSE
and SOURCE.md), changed only by breakpoint comments and traced through a small driver of ours. On every one, every
marked snapshot is captured and no check fails (correct code is never called wrong); a bug planted in a copy is named
as the first failure, at the step where it happens in the model's data flow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from generator.cli import main
from generator.reports import REPORTS
from generator.trace.markers import find_markers

CORPUS = Path(__file__).resolve().parent / "trace_corpus"
DRIVERS = sorted(CORPUS.glob("*/trace_driver*.py"))
ENTRIES = sorted({driver.parent for driver in DRIVERS})


def driver_id(driver: Path) -> str:
    return f"{driver.parent.name}/{driver.stem.removeprefix('trace_driver').strip('_') or 'driver'}"


def trace(driver: Path, out: Path, *extra: str) -> dict:
    """Trace ``driver`` as the CLI does, into ``out``; the written snapshots.json."""
    assert main(["trace", str(driver), "--out", str(out), "--name", "t", "-q", *extra]) == 0
    return json.loads((out / "t" / "snapshots.json").read_text(encoding="utf-8"))


def marked_labels(entry: Path, numbering: str) -> set[str]:
    """The labels of every snapshot marked in the entry's files (each alternative of a shared line too)."""
    catalogue = REPORTS[numbering]
    labels = set()
    for path in entry.rglob("*.py"):
        for marker in find_markers(path):
            if marker.numbering == numbering and marker.number is not None:
                labels.update(catalogue.label(n) for n in (marker.number, *marker.alternatives))
    return labels


def verdicts(data: dict) -> dict[str, list[str]]:
    by_status: dict[str, list[str]] = {"passed": [], "failed": [], "not checkable": []}
    for snap in data["snapshots"]:
        if snap["captured"]:
            by_status[{True: "passed", False: "failed", None: "not checkable"}[snap["check"]["passed"]]].append(snap["label"])
    return by_status


def test_the_corpus_has_ten_licensed_implementations_each_with_its_source():
    assert len(ENTRIES) >= 10
    for entry in ENTRIES:
        source = (entry / "SOURCE.md").read_text(encoding="utf-8")
        assert "https://github.com/" in source and "| commit |" in source
        assert any(name in source for name in ("MIT", "BSD", "Apache")), entry.name
        assert (entry / "LICENSE").is_file(), entry.name


@pytest.mark.parametrize("hit", ["1", "2"])
@pytest.mark.parametrize("driver", DRIVERS, ids=driver_id)
def test_every_marked_snapshot_of_a_real_implementation_is_captured_and_no_check_fails(tmp_path, driver, hit):
    data = trace(driver, tmp_path, "--hit", hit)
    captured = {s["label"] for s in data["snapshots"] if s["captured"]}
    assert marked_labels(driver.parent, data["catalogue"]) <= captured
    assert verdicts(data)["failed"] == [], [s["check"]["detail"] for s in data["snapshots"] if s["check"]["passed"] is False]
    assert data["outcome"]["first_failure"] is None
    assert verdicts(data)["passed"], "the checks really ran"
