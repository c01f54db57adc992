"""Round twelve's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND12_GPT.md): our files
only are committed, and their correct code is traced where their upstream files are present beside our own (the
folder `measure.py` measured: $TRACE_FRESH_ROUND12, by default /work/fresh_round12/<folder>); elsewhere (CI: upstream
code is never committed) skipped. The other round-twelve helper's ViT folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import ours, our_files_only, planted_bugs, red_and_passed, trace_report, traced, with_bug
from tests.fresh_rounds import upstream_driver  # noqa: F401 - a fixture

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
PASSED_AT_LEAST = {"rishikesh2715_mini_GPT2": 15, "ltrujello_Transformer": 34, NOTEBOOK: 16}  # (NOTEBOOK's G04 read
# since forms13b: the positions added inside its module, tests/test_trace_round13_forms_b.py)
# the true deviations of upstream code, judged by hand: (step, the bug form its failure names). mini-GPT2 gives
# scaled_dot_product_attention dropout_p=self.attn_dropout.p whatever the mode: its weights dropped after model.eval()
TRUE_REDS = {"rishikesh2715_mini_GPT2": [("G15", "attention dropout active in eval mode"),
                                         ("G16", "attention dropout active in eval mode")]}


@pytest.mark.slow
@pytest.mark.parametrize("name", GPT_AND_ENCODER_DECODER)
def test_round_twelve_correct_code_gets_no_false_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    true_reds = TRUE_REDS.get(name, [])
    snapshots = traced(upstream_driver(12, name), tmp_path / "out", status=1 if true_reds else 0)
    red, passed = red_and_passed(snapshots)
    assert sorted(red) == sorted(label for label, _ in true_reds)
    named = {s["label"]: (s["check"].get("evidence") or {}).get("name") for s in snapshots if s["captured"]}
    assert all(named[label] == form for label, form in true_reds)
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"


@pytest.mark.slow
def test_the_notebooks_positions_added_twice_inside_its_module_are_named_first_where_its_upstream_files_are_present(
        tmp_path, upstream_driver):
    """Its B6 (`x + 2 * self.pe[:, :x.size(1)]` in the PositionalEncoding's forward), missed before forms13b."""
    folder = upstream_driver(12, NOTEBOOK).parent
    bug = next(b for b in planted_bugs(ours(12) / NOTEBOOK) if b["id"] == "B6")
    data = trace_report(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    assert (data["outcome"]["first_failure"] or "").startswith("G04 "), data["outcome"]["first_failure"]
    check = next(s for s in data["snapshots"] if s["label"] == "G04")["check"]
    assert check["evidence"]["name"] == "positions added twice", check["detail"]
