"""Round fourteen's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND14_GPT.md): our files
only are committed, and their correct code is traced where their upstream files are present beside our own (the
folder `measure.py` measured: $TRACE_FRESH_ROUND14, by default /work/fresh_round14/<folder>); elsewhere (CI: upstream
code is never committed) skipped. The forms these implementations taught `trace` are held without them by
tests/test_trace_round14_forms.py. The other round-fourteen helper's ViT folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (assert_no_red_verdict, our_files_only, ours, planted_bugs, traced,  # noqa: F401
                                upstream_driver, with_bug)

NOTEBOOK = "AwikDhar_GPT"
SCRIPTS = ["alex_matton_causal_transformer_decoder", "pnthi160403_research_BART"]
# the checks that must really run on each correct code (its passed count after the fixes, less a margin)
PASSED_AT_LEAST = {NOTEBOOK: 18, "alex_matton_causal_transformer_decoder": 13, "pnthi160403_research_BART": 34}


def test_round_fourteen_gpt_folders_each_hold_our_files_only_and_plant_six_bugs_each():
    assert our_files_only(14, SCRIPTS, stubs=("bart",)) == 12
    assert {p.name for p in (ours(14) / NOTEBOOK).iterdir()} == {"SOURCE.md", "our_cells.json", "planted_bugs.json",
                                                                 "markers.json", "upstream.json"}
    assert len(planted_bugs(ours(14) / NOTEBOOK)) == 6


def test_round_fourteen_plants_at_least_three_bugs_in_new_forms_in_each_implementation():
    for name in [NOTEBOOK, *SCRIPTS]:
        assert sum(bug["new_form"] for bug in planted_bugs(ours(14) / name)) >= 3, name


@pytest.mark.slow
@pytest.mark.parametrize("name", [NOTEBOOK, *SCRIPTS])
def test_round_fourteen_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                             name):
    assert_no_red_verdict(upstream_driver(14, name), tmp_path / "out", PASSED_AT_LEAST[name])


@pytest.mark.slow
def test_the_swiglu_gate_times_its_own_half_is_named_where_upstream_is_present(tmp_path, upstream_driver):
    """AwikDhar's B3 (`silu(x1) * x1`), unseen in the first result: the split SwiGLU now read at G21."""
    folder = upstream_driver(14, NOTEBOOK).parent
    bug = next(b for b in planted_bugs(folder) if b["id"] == "B3")
    snapshots = traced(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    failed = [s for s in snapshots if s["captured"] and s["check"]["passed"] is False]
    assert failed[0]["label"] == "G21"
    assert failed[0]["check"]["evidence"]["name"] == "the gate times itself"


@pytest.mark.slow
@pytest.mark.parametrize("name, bug, label, evidence", [
    (NOTEBOOK, "B2", "G25", "DynamicTanh without its alpha"),
    ("alex_matton_causal_transformer_decoder", "B1", "#28", "keys from the query rows alone"),
    ("alex_matton_causal_transformer_decoder", "B2", "#35", "cross-attention over the decoder's stream"),
    ("alex_matton_causal_transformer_decoder", "B3", "#28", "no query attends to a later key"),
    ("alex_matton_causal_transformer_decoder", "B4", "#41", "new rows before the cache"),
])
def test_the_leftovers_new_forms_are_named_where_upstream_is_present(tmp_path, upstream_driver, name, bug, label,
                                                                      evidence):
    """Round fifteen's leftovers (ROUND14_GPT.md): DynamicTanh's alpha left out, the one query row's attention inputs
    and the decoded rows' order, unseen in the first result."""
    folder = upstream_driver(14, name).parent
    planted = next(b for b in planted_bugs(folder) if b["id"] == bug)
    snapshots = traced(with_bug(tmp_path, folder, planted), tmp_path / "out", status=1)
    failed = [s for s in snapshots if s["captured"] and s["check"]["passed"] is False]
    assert failed[0]["label"] == label
    assert failed[0]["check"]["evidence"]["name"] == evidence
