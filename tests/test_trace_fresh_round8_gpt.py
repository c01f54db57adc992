"""Round eight's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND8_GPT.md) get no false red
verdict on their correct code — traced where their upstream files are present beside our own (the folder `measure.py`
measured: $TRACE_FRESH_ROUND8, by default /work/fresh_round8/<folder>); elsewhere (CI: upstream code is never committed)
skipped. The forms these implementations taught `trace` are held without them by tests/test_trace_round8_forms.py.
The other round-eight helper's ViT folders have their own test file."""

from __future__ import annotations

import json

import pytest

from tests.fresh_rounds import ours, planted_bugs, red_and_passed, upstream_driver, with_bug  # noqa: F401 - a fixture
from tests.fresh_rounds import trace_report as traced
from tests.fresh_rounds import traced as traced_snapshots

OURS = ours(8)
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
def test_round_eight_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                          name):
    red, passed = red_and_passed(traced_snapshots(upstream_driver(8, name), tmp_path / "out"))
    assert not red
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"


@pytest.mark.slow
@pytest.mark.parametrize("name, bug_id", list(NAMED_FIRST_FROM_ATTENTION_CALLS), ids=" ".join)
def test_a_bug_in_what_an_attention_module_was_given_is_named_first_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name, bug_id):
    folder = upstream_driver(8, name).parent
    bug = next(b for b in planted_bugs(OURS / name) if b["id"] == bug_id)
    data = traced(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    first = (data["outcome"]["first_failure"] or "").split(" ")[0]
    assert first in bug["expected"], data["outcome"]["first_failure"]
    check = next(s for s in data["snapshots"] if s["label"] == first)["check"]
    assert check["evidence"]["name"] == NAMED_FIRST_FROM_ATTENTION_CALLS[(name, bug_id)], check["detail"]
