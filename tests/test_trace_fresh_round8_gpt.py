"""Round eight's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND8_GPT.md) get no false red
verdict on their correct code — traced where their upstream files are present beside our own (the folder `measure.py`
measured: $TRACE_FRESH_ROUND8, by default /work/fresh_round8/<folder>); elsewhere (CI: upstream code is never committed)
skipped. The forms these implementations taught `trace` are held without them by tests/test_trace_round8_forms.py.
The other round-eight helper's ViT folders have their own test file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.test_trace_fresh import driver_of, traced, with_bug

OURS = Path(__file__).resolve().parent / "trace_fresh" / "round8"
UPSTREAM = Path(os.environ.get("TRACE_FRESH_ROUND8", "/work/fresh_round8"))
GPT_AND_ENCODER_DECODER = ["conceptofmind_t5_pytorch", "facebookresearch_detr", "google_gemma_pytorch"]
# the checks that must really run on each correct code (its passed count after the fixes, less a margin)
PASSED_AT_LEAST = {"conceptofmind_t5_pytorch": 20, "facebookresearch_detr": 7, "google_gemma_pytorch": 18}
# the planted bugs named first since the attention call of an unmarked statement is read (ROUND8_GPT.md, "After mha9"):
# the bug form each is named with (B1: the LayerNorm's input is that call's output alone)
NAMED_FIRST_FROM_ATTENTION_CALLS = {("facebookresearch_detr", "B1"): "residual dropped",
                                     ("facebookresearch_detr", "B2"): "positions added twice",
                                     ("facebookresearch_detr", "B5"): "K or V from another input",
                                     ("conceptofmind_t5_pytorch", "B5"): "K or V from another input"}


def test_round_eight_gpt_folders_each_hold_our_files_only():
    for name in GPT_AND_ENCODER_DECODER:
        files = {p.name for p in (OURS / name).iterdir()}
        assert {"SOURCE.md", "driver.py", "planted_bugs.json", "markers.json"} <= files
        bugs = json.loads((OURS / name / "planted_bugs.json").read_text(encoding="utf-8"))
        assert len(bugs) >= 4 and all(bug["old"] != bug["new"] and bug["expected"] for bug in bugs)
        # our stubs say so in their first lines; no upstream file is committed
        for path in (OURS / name).rglob("*.py"):
            if path.name != "driver.py":
                assert "ours" in path.read_text(encoding="utf-8")[:300].lower(), path


@pytest.mark.slow
@pytest.mark.parametrize("name", GPT_AND_ENCODER_DECODER)
def test_round_eight_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, name):
    folder = UPSTREAM / name
    if not driver_of(folder).exists():
        pytest.skip(f"round eight's upstream files are not on this machine ({folder}; see {name}/SOURCE.md)")
    mine = json.loads((OURS / name / "planted_bugs.json").read_text(encoding="utf-8"))
    assert json.loads((folder / "planted_bugs.json").read_text(encoding="utf-8")) == mine, "the folder measured"
    data = traced(driver_of(folder), tmp_path / "out", status=0)
    checks = {s["label"]: s["check"] for s in data["snapshots"] if s["captured"]}
    assert not {label: check["detail"] for label, check in checks.items() if check["passed"] is False}
    assert sum(check["passed"] is True for check in checks.values()) >= PASSED_AT_LEAST[name], "the checks really ran"


@pytest.mark.slow
@pytest.mark.parametrize("name, bug_id", list(NAMED_FIRST_FROM_ATTENTION_CALLS), ids=" ".join)
def test_a_bug_in_what_an_attention_module_was_given_is_named_first_where_its_upstream_files_are_present(
        tmp_path, name, bug_id):
    folder = UPSTREAM / name
    if not driver_of(folder).exists():
        pytest.skip(f"round eight's upstream files are not on this machine ({folder}; see {name}/SOURCE.md)")
    bug = next(b for b in json.loads((OURS / name / "planted_bugs.json").read_text(encoding="utf-8"))
               if b["id"] == bug_id)
    data = traced(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    first = (data["outcome"]["first_failure"] or "").split(" ")[0]
    assert first in bug["expected"], data["outcome"]["first_failure"]
    check = next(s for s in data["snapshots"] if s["label"] == first)["check"]
    assert check["evidence"]["name"] == NAMED_FIRST_FROM_ATTENTION_CALLS[(name, bug_id)], check["detail"]
