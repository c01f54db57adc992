"""Round nine's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND9_GPT.md) get no false red
verdict on their correct code — traced where their upstream files are present beside our own (the folder `measure.py`
measured: $TRACE_FRESH_ROUND9, by default /work/fresh_round9/<folder>); elsewhere (CI: upstream code is never committed)
skipped. The forms these implementations taught `trace` are held without them by tests/test_trace_round9_forms.py.
The other round-nine helper's ViT folders have their own test file."""

from __future__ import annotations

import json

import pytest

from tests.fresh_rounds import ours, planted_bugs, red_and_passed, traced, upstream_driver, with_bug  # noqa: F401
from tests.fresh_rounds import trace_report

OURS = ours(9)
GPT_AND_ENCODER_DECODER = ["Taeksu_Kim_alibi_gqa_transformer", "deepseek_ai_DeepSeek_V3", "zphang_minimal_opt"]
# the checks that must really run on each correct code (its passed count after the fixes, less a margin)
PASSED_AT_LEAST = {"Taeksu_Kim_alibi_gqa_transformer": 34, "deepseek_ai_DeepSeek_V3": 9, "zphang_minimal_opt": 20}
# the steps read since gqa10 (ROUND9_GPT.md, "After gqa10"): grouped-query K/V and the head steps, scores and context
# that read them, ALiBi's key-only causal scores, the SwiGLU feed-forward's gate and output
READ_SINCE_GQA10 = {"Taeksu_Kim_alibi_gqa_transformer": ("#8", "#9", "#12", "#17", "#18", "#22", "#23", "#24", "#27",
                                                         "#31", "#32", "#33", "#35", "#38", "#39")}
# the planted bugs named first since forms10 (ROUND9_GPT.md, "After forms10"), with the bug form each is named with
NAMED_FIRST_SINCE_FORMS10 = {("zphang_minimal_opt", "B4"): "heads merged without moving the axis back",
                             ("deepseek_ai_DeepSeek_V3", "B5"): "sublayer given the stream, not its LayerNorm"}


def test_round_nine_gpt_folders_each_hold_our_files_only():
    for name in GPT_AND_ENCODER_DECODER:
        files = {p.name for p in (OURS / name).iterdir()}
        assert {"SOURCE.md", "driver.py", "planted_bugs.json", "markers.json", "upstream.json"} <= files
        bugs = json.loads((OURS / name / "planted_bugs.json").read_text(encoding="utf-8"))
        assert len(bugs) >= 4 and all(bug["old"] != bug["new"] and bug["expected"] for bug in bugs)
        # our stubs say so in their first lines; no upstream file is committed
        upstream = set(json.loads((OURS / name / "upstream.json").read_text(encoding="utf-8"))["files"])
        for path in (OURS / name).rglob("*.py"):
            assert str(path.relative_to(OURS / name)) not in upstream, path
            if path.name != "driver.py":
                assert "ours" in path.read_text(encoding="utf-8")[:300].lower(), path


@pytest.mark.slow
@pytest.mark.parametrize("name", GPT_AND_ENCODER_DECODER)
def test_round_nine_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                         name):
    snapshots = traced(upstream_driver(9, name), tmp_path / "out")
    red, passed = red_and_passed(snapshots)
    assert not red
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"
    checks = {s["label"]: s.get("check") or {} for s in snapshots if s["captured"]}
    assert [label for label in READ_SINCE_GQA10.get(name, ()) if checks[label].get("passed") is not True] == []


@pytest.mark.slow
@pytest.mark.parametrize("name, bug_id", list(NAMED_FIRST_SINCE_FORMS10), ids=" ".join)
def test_a_sequence_first_merge_and_a_mixture_of_experts_fed_the_stream_are_named_first_where_upstream_is_present(
        tmp_path, upstream_driver, name, bug_id):
    folder = upstream_driver(9, name).parent
    bug = next(b for b in planted_bugs(OURS / name) if b["id"] == bug_id)
    data = trace_report(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    first = (data["outcome"]["first_failure"] or "").split(" ")[0]
    assert first in bug["expected"], data["outcome"]["first_failure"]
    check = next(s for s in data["snapshots"] if s["label"] == first)["check"]
    assert check["evidence"]["name"] == NAMED_FIRST_SINCE_FORMS10[(name, bug_id)], check["detail"]


@pytest.mark.slow
def test_deepseeks_own_embedding_and_its_last_position_logits_are_read_and_its_experts_said_so(tmp_path,
                                                                                            upstream_driver):
    checks = {s["label"]: s["check"] for s in traced(upstream_driver(9, "deepseek_ai_DeepSeek_V3"), tmp_path / "out")
              if s["captured"]}
    assert checks["G02"]["passed"] is True and checks["G26"]["passed"] is True, (checks["G02"], checks["G26"])
    assert checks["G22"]["passed"] is None and "a mixture of experts" in checks["G22"]["detail"], checks["G22"]
