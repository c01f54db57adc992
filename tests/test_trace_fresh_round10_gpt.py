"""Round ten's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND10_GPT.md) get no false red
verdict on their correct code — traced where their upstream files are present beside our own (the folder `measure.py`
measured: $TRACE_FRESH_ROUND10, by default /work/fresh_round10/<folder>); elsewhere (CI: upstream code is never
committed) skipped. The forms these implementations taught `trace` are held without them by
tests/test_trace_round10_forms.py. The other round-ten helper's ViT folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import assert_no_red_verdict, our_files_only, upstream_driver  # noqa: F401 - a fixture

CS336 = "shiki_dml_My_implement_for_the_assignments_of_cs336"
GPT_AND_ENCODER_DECODER = ["joeynmt_joeynmt", "rato_tokyo_new_llm", CS336]
# our stubs beside our files: joeynmt's three imports not installed here, the CS336 package's einops and __init__
STUBS = {"importlib_metadata.py", "sentencepiece.py", "subword_nmt", "einops", "cs336_basics"}
# the checks that must really run on each correct code (its passed count after the fixes, less a margin)
PASSED_AT_LEAST = {"joeynmt_joeynmt": 30, "rato_tokyo_new_llm": 18, CS336: 15}


def test_round_ten_gpt_folders_each_hold_our_files_only_and_plant_four_to_six_bugs_each():
    assert our_files_only(10, GPT_AND_ENCODER_DECODER, STUBS) == 18


@pytest.mark.slow
@pytest.mark.parametrize("name", GPT_AND_ENCODER_DECODER)
def test_round_ten_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                        name):
    assert_no_red_verdict(upstream_driver(10, name), tmp_path / "out", PASSED_AT_LEAST[name])
