"""Round twelve's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND12_GPT.md): our files
only are committed, and their correct code is traced where their upstream files are present beside our own (the
folder `measure.py` measured: $TRACE_FRESH_ROUND12, by default /work/fresh_round12/<folder>); elsewhere (CI: upstream
code is never committed) skipped. The other round-twelve helper's ViT folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import assert_no_red_verdict, ours, our_files_only, planted_bugs, upstream_driver  # noqa: F401

NOTEBOOK = "Yeabebe_Simple_Transformer"
GPT_AND_ENCODER_DECODER = ["rishikesh2715_mini_GPT2", "ltrujello_Transformer", NOTEBOOK]
# our stub beside our files: ltrujello's transformer/utils.py (upstream's reads a .env file through python-dotenv)
STUBS = {"transformer"}


def test_round_twelve_gpt_folders_each_hold_our_files_only_and_plant_six_bugs_each():
    assert our_files_only(12, GPT_AND_ENCODER_DECODER[:2], STUBS) == 12
    notebook = ours(12) / NOTEBOOK  # a notebook's folder holds our cell instead of a driver
    assert {p.name for p in notebook.iterdir()} == {"SOURCE.md", "our_cells.json", "planted_bugs.json", "markers.json",
                                                    "upstream.json"}
    assert len(planted_bugs(notebook)) == 6
    stub = ours(12) / "ltrujello_Transformer" / "transformer" / "utils.py"
    assert stub.read_text(encoding="utf-8").startswith('"""Our stub, not upstream')


# the checks that must really run on each correct code (its passed count after the fix, less a margin)
PASSED_AT_LEAST = {"rishikesh2715_mini_GPT2": 15, "ltrujello_Transformer": 34, NOTEBOOK: 15}


@pytest.mark.slow
@pytest.mark.parametrize("name", GPT_AND_ENCODER_DECODER)
def test_round_twelve_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                           name):
    assert_no_red_verdict(upstream_driver(12, name), tmp_path / "out", PASSED_AT_LEAST[name])
