"""Round thirteen's fresh ViTs (tests/trace_fresh/ROUND13_VIT.md): our files only are committed, and their correct
code is traced where their upstream files are present beside our own (the folder `measure.py` measured:
$TRACE_FRESH_ROUND13, by default /work/fresh_round13/<folder>); elsewhere (CI: upstream code is never committed)
skipped. The form their first result left not checkable is held by tests/test_trace_round13_forms_vit.py; the other
round-thirteen helper's GPT and encoder–decoder folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import ours, our_files_only, planted_bugs, red_and_passed, traced, upstream_driver  # noqa: F401

NOTEBOOK = "raihan1-git_ViT-from-scratch"
VITS = ["AD6767_mnist-vit-from-scratch", "Ruian7P_Tiny-ViT-from-Scratch-on-CIFAR100", NOTEBOOK]


def test_round_thirteen_vit_folders_each_hold_our_files_only_and_plant_six_bugs_each():
    assert our_files_only(13, VITS[:2]) == 12
    notebook = ours(13) / NOTEBOOK  # a notebook's folder holds our cell instead of a driver
    assert {p.name for p in notebook.iterdir()} == {"SOURCE.md", "our_cells.json", "planted_bugs.json", "markers.json",
                                                    "upstream.json"}
    assert len(planted_bugs(notebook)) == 6


# the checks that must really run on each correct code (every captured step passed in the first result: 14, 18, 20)
PASSED_AT_LEAST = {"AD6767_mnist-vit-from-scratch": 14, "Ruian7P_Tiny-ViT-from-Scratch-on-CIFAR100": 18, NOTEBOOK: 20}


@pytest.mark.slow
@pytest.mark.parametrize("name", VITS)
def test_round_thirteen_vits_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path,
                                                                                                 upstream_driver, name):
    red, passed = red_and_passed(traced(upstream_driver(13, name), tmp_path / "out"))
    assert red == {}
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"
