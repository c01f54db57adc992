"""Round seventeen's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND17_GPT.md): our files
only are committed, and their correct code is traced where their upstream files are present beside our own (the
folder `measure.py` measured: $TRACE_FRESH_ROUND17, by default /work/fresh_round17/<folder>); elsewhere (CI: upstream
code is never committed) skipped. The forms these implementations taught `trace` are held without them by
tests/test_trace_round17_forms_gpt.py. The other round-seventeen helper's ViT folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (assert_no_red_verdict, our_files_only, ours, planted_bugs, traced,  # noqa: F401
                                upstream_driver, with_bug)

MOSAIC = "lpkphd_mosaic-gpt"
T5 = "NovelAI_t5"
RETNET = "Jamie-Stirling_RetNet"
# the checks that must really run on each correct code (its passed count after the fixes, less a margin)
PASSED_AT_LEAST = {MOSAIC: 12, T5: 7, RETNET: 9}


def test_round_seventeen_gpt_folders_each_hold_our_files_only_and_plant_their_bugs():
    assert our_files_only(17, [MOSAIC, RETNET]) == 12
    assert our_files_only(17, [T5], stubs=("pydantic", "einops")) == 5


def test_round_seventeen_plants_at_least_three_bugs_in_new_forms_in_each_implementation():
    for name in [MOSAIC, T5, RETNET]:
        assert sum(bug["new_form"] for bug in planted_bugs(ours(17) / name)) >= 3, name


def test_round_seventeen_marks_no_planted_bug_indistinguishable_or_unmarked():
    """Every bug of this round changes the numbers of a marked step in a way no correct form computes."""
    for name in [MOSAIC, T5, RETNET]:
        assert not [bug["id"] for bug in planted_bugs(ours(17) / name)
                    if "indistinguishable" in bug or "unmarked" in bug], name


@pytest.mark.slow
@pytest.mark.parametrize("name", [MOSAIC, T5, RETNET])
def test_round_seventeen_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path,
                                                                                             upstream_driver, name):
    assert_no_red_verdict(upstream_driver(17, name), tmp_path / "out", PASSED_AT_LEAST[name])


@pytest.mark.slow
@pytest.mark.parametrize("bug_id, label, form", [("B1", "G12", "no query attends to a later key"),
                                                 ("B2", "G12", "decay reversed"),
                                                 ("B3", "G09", "xPos scaled the wrong way")])
def test_retnets_decay_bugs_are_named_at_the_mask_where_upstream_is_present(tmp_path, upstream_driver, bug_id, label,
                                                                           form):
    """RetNet's B1 (the decay without its causal factor) and B2 (the decay reversed), named in the first result only
    through the false red every run had at G12; B3 (xPos on the keys without downscale), unseen then."""
    folder = upstream_driver(17, RETNET).parent
    bug = next(b for b in planted_bugs(folder) if b["id"] == bug_id)
    snapshots = traced(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    failed = [s for s in snapshots if s["captured"] and s["check"]["passed"] is False]
    assert failed[0]["label"] == label
    assert failed[0]["check"]["evidence"]["name"] == form


@pytest.mark.slow
def test_mlas_scale_without_the_rotary_width_is_named_at_the_scores_where_upstream_is_present(tmp_path,
                                                                                             upstream_driver):
    """mosaic-gpt's B1 (1/√d_head where Q and K are d_head + rope_dim wide), passed in the first result: the scores
    are below 1e-3, where the absolute tolerance passed any scale."""
    folder = upstream_driver(17, MOSAIC).parent
    bug = next(b for b in planted_bugs(folder) if b["id"] == "B1")
    snapshots = traced(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    failed = [s for s in snapshots if s["captured"] and s["check"]["passed"] is False]
    assert failed[0]["label"] == "G11"
    assert failed[0]["check"]["evidence"]["name"] == "another scaling than 1/√hs"
