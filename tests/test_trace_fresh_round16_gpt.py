"""Round sixteen's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND16_GPT.md): our files
only are committed, and their correct code is traced where their upstream files are present beside our own (the
folder `measure.py` measured: $TRACE_FRESH_ROUND16, by default /work/fresh_round16/<folder>); elsewhere (CI: upstream
code is never committed) skipped. The forms these implementations taught `trace` are held without them by
tests/test_trace_round16_forms_gpt.py. The other round-sixteen helper's ViT folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (assert_no_red_verdict, our_files_only, ours, planted_bugs, traced,  # noqa: F401
                                upstream_driver, with_bug)

XL = "augustwester_transformer-xl"
PERCEIVER = "esceptico_perceiver-io"
GEMMA2 = "JacksonCakes_GeLinear"
# the checks that must really run on each correct code (its passed count after the fixes, less a margin)
PASSED_AT_LEAST = {XL: 10, PERCEIVER: 2, GEMMA2: 18}


def test_round_sixteen_gpt_folders_each_hold_our_files_only_and_plant_six_bugs_each():
    assert our_files_only(16, [XL, PERCEIVER]) == 12
    assert our_files_only(16, [GEMMA2], stubs=("accelerate", "cut_cross_entropy", "einops")) == 6


def test_round_sixteen_plants_at_least_three_bugs_in_new_forms_in_each_implementation():
    for name in [XL, PERCEIVER, GEMMA2]:
        assert sum(bug["new_form"] for bug in planted_bugs(ours(16) / name)) >= 3, name


def test_round_sixteen_says_which_planted_bugs_no_check_can_tell_from_a_correct_form():
    """Gemma 2's post-attention norm left out is a correct pre-norm block; Perceiver's encoder without its query
    residual is upstream's own `use_query_residual=False`."""
    flagged = {name: [bug["id"] for bug in planted_bugs(ours(16) / name) if "indistinguishable" in bug]
               for name in [XL, PERCEIVER, GEMMA2]}
    assert flagged == {XL: [], PERCEIVER: ["B3"], GEMMA2: ["B3"]}


@pytest.mark.slow
@pytest.mark.parametrize("name", [XL, PERCEIVER, GEMMA2])
def test_round_sixteen_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                             name):
    assert_no_red_verdict(upstream_driver(16, name), tmp_path / "out", PASSED_AT_LEAST[name])


@pytest.mark.slow
def test_gemma2s_soft_cap_without_the_scale_is_named_at_the_scores_where_upstream_is_present(tmp_path,
                                                                                            upstream_driver):
    """GeLinear's B5 (`scaling_factor = 1`), behind the false red at G18 in the first result."""
    folder = upstream_driver(16, GEMMA2).parent
    bug = next(b for b in planted_bugs(folder) if b["id"] == "B5")
    snapshots = traced(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    failed = [s for s in snapshots if s["captured"] and s["check"]["passed"] is False]
    assert failed[0]["label"] == "G11"
    assert failed[0]["check"]["evidence"]["name"] == "1/√d missing"


# the planted bugs named first at their own step since helper leftovers17's fixes (ROUND16_GPT.md, "Leftovers")
NAMED_SINCE_LEFTOVERS = [(XL, "B3", "G13", "causal mask aligned to the keys' start"),
                         (XL, "B6", "G24", "residual dropped")]


@pytest.mark.slow
@pytest.mark.parametrize("name, bug_id, step, form", NAMED_SINCE_LEFTOVERS)
def test_transformer_xls_memory_mask_and_post_norm_residual_are_named_where_upstream_is_present(
        tmp_path, upstream_driver, name, bug_id, step, form):
    folder = upstream_driver(16, name).parent
    bug = next(b for b in planted_bugs(folder) if b["id"] == bug_id)
    snapshots = traced(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    failed = [s for s in snapshots if s["captured"] and s["check"]["passed"] is False]
    assert failed[0]["label"] == step
    assert failed[0]["check"]["evidence"]["name"] == form
