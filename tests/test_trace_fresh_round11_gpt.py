"""Round eleven's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND11_GPT.md) get no false
red verdict on their correct code — traced where their upstream files are present beside our own (the folder
`measure.py` measured: $TRACE_FRESH_ROUND11, by default /work/fresh_round11/<folder>); elsewhere (CI: upstream code is
never committed) skipped. The forms these implementations taught `trace` are held without them by
tests/test_trace_round11_forms.py. The other round-eleven helper's ViT folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import assert_no_red_verdict, ours, our_files_only, planted_bugs, upstream_driver  # noqa: F401

NOTEBOOK = "LoNebula_Lluminai"
GPT_AND_ENCODER_DECODER = ["OliverPerrin_LexiMind", "user666acid_LLM_from_scratch", NOTEBOOK]
# our stubs beside our files: LexiMind's package __init__ (upstream's imports the task heads)
STUBS = {"models"}
# the checks that must really run on each correct code (its passed count after the fixes, less a margin)
PASSED_AT_LEAST = {"OliverPerrin_LexiMind": 26, "user666acid_LLM_from_scratch": 15, NOTEBOOK: 12}


def test_round_eleven_gpt_folders_each_hold_our_files_only_and_plant_six_bugs_each():
    assert our_files_only(11, GPT_AND_ENCODER_DECODER[:2], STUBS) == 12
    notebook = ours(11) / NOTEBOOK  # a notebook's folder holds our cell instead of a driver
    assert {p.name for p in notebook.iterdir()} == {"SOURCE.md", "our_cells.json", "planted_bugs.json", "markers.json",
                                                    "upstream.json"}
    assert len(planted_bugs(notebook)) == 6


@pytest.mark.slow
@pytest.mark.parametrize("name", GPT_AND_ENCODER_DECODER)
def test_round_eleven_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                           name):
    assert_no_red_verdict(upstream_driver(11, name), tmp_path / "out", PASSED_AT_LEAST[name])
