"""Round thirteen's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND13_GPT.md): our files
only are committed, and their correct code is traced where their upstream files are present beside our own (the
folder `measure.py` measured: $TRACE_FRESH_ROUND13, by default /work/fresh_round13/<folder>); elsewhere (CI: upstream
code is never committed) skipped. The forms these implementations taught `trace` are held without them by
tests/test_trace_round13_forms.py. The other round-thirteen helper's ViT folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (assert_no_red_verdict, our_files_only, planted_bugs, traced,  # noqa: F401 - a fixture
                                upstream_driver, with_bug)

GPT_AND_ENCODER_DECODER = ["zhangir_azerbayev_ml_monorepo", "Prasannajaga_transformers_playground",
                           "Alexander_Nestor_Bergmann_pytorch_transformer_demo"]
# the checks that must really run on each correct code (its passed count after the fixes, less a margin)
PASSED_AT_LEAST = {"zhangir_azerbayev_ml_monorepo": 10, "Prasannajaga_transformers_playground": 17,
                   "Alexander_Nestor_Bergmann_pytorch_transformer_demo": 37}


def test_round_thirteen_gpt_folders_each_hold_our_files_only_and_plant_six_bugs_each():
    assert our_files_only(13, GPT_AND_ENCODER_DECODER) == 18


@pytest.mark.slow
@pytest.mark.parametrize("name", GPT_AND_ENCODER_DECODER)
def test_round_thirteen_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                             name):
    assert_no_red_verdict(upstream_driver(13, name), tmp_path / "out", PASSED_AT_LEAST[name])


@pytest.mark.slow
def test_the_causal_mask_left_off_in_the_buffer_condition_is_named_at_the_masked_scores_where_upstream_is_present(
        tmp_path, upstream_driver):
    """Prasannajaga's B2, named one step late (G14) in the first result: no mask line to mark, the masked scores now
    read from their own masked entries."""
    folder = upstream_driver(13, "Prasannajaga_transformers_playground").parent
    bug = next(b for b in planted_bugs(folder) if b["id"] == "B2")
    snapshots = traced(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    failed = [s for s in snapshots if s["captured"] and s["check"]["passed"] is False]
    assert failed[0]["label"] == "G13"
    assert failed[0]["check"]["evidence"]["name"] == "no query attends to a later key"
