"""Round fifteen's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND15_GPT.md): our files
only are committed, and their correct code is traced where their upstream files are present beside our own (the
folder `measure.py` measured: $TRACE_FRESH_ROUND15, by default /work/fresh_round15/<folder>); elsewhere (CI: upstream
code is never committed) skipped. The forms these implementations taught `trace` are held without them by
tests/test_trace_round15_forms_gpt.py. The other round-fifteen helper's ViT folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (assert_no_red_verdict, our_files_only, ours, planted_bugs, red_and_passed,  # noqa: F401
                                traced, upstream_driver, with_bug)

MOE = "AviSoori1x_makeMoE"
DIFF = "nanowell_Differential-Transformer-PyTorch"
UNIVERSAL = "RobertCsordas_transformer_generalization"
# the checks that must really run on each correct code (its passed count after the fixes, less a margin)
PASSED_AT_LEAST = {MOE: 16, DIFF: 19, UNIVERSAL: 15}


def test_round_fifteen_gpt_folders_each_hold_our_files_only_and_plant_six_bugs_each():
    assert our_files_only(15, [MOE, DIFF]) == 12
    assert our_files_only(15, [UNIVERSAL], stubs=("framework", "models")) == 6
    assert {p.name for p in (ours(15) / UNIVERSAL / "framework").rglob("*.py")} == {"__init__.py"}


def test_round_fifteen_plants_at_least_three_bugs_in_new_forms_in_each_implementation():
    for name in [MOE, DIFF, UNIVERSAL]:
        assert sum(bug["new_form"] for bug in planted_bugs(ours(15) / name)) >= 3, name


@pytest.mark.slow
@pytest.mark.parametrize("name", [DIFF, UNIVERSAL])
def test_round_fifteen_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                             name):
    assert_no_red_verdict(upstream_driver(15, name), tmp_path / "out", PASSED_AT_LEAST[name])


@pytest.mark.slow
def test_makemoe_is_red_only_where_upstream_scales_by_the_model_width(tmp_path, upstream_driver):
    """makeMoE's `Head` scales its scores by `C**-0.5` with C the model width, not the head size: a true red at G11
    (judged by hand in ROUND15_GPT.md), its only one."""
    snapshots = traced(upstream_driver(15, MOE), tmp_path / "out", status=1)
    red, passed = red_and_passed(snapshots)
    assert list(red) == ["G11"], red
    check = next(s["check"] for s in snapshots if s["label"] == "G11")
    assert check["evidence"]["name"] == "another scaling than 1/√hs"
    assert passed >= PASSED_AT_LEAST[MOE]


@pytest.mark.slow
def test_nanowells_unmasked_second_map_is_named_at_the_context_where_upstream_is_present(tmp_path, upstream_driver):
    """nanowell's B4 (`A2 = A2`), unseen in the first result: the maps' difference G15's line read gives later keys
    weight."""
    folder = upstream_driver(15, DIFF).parent
    bug = next(b for b in planted_bugs(folder) if b["id"] == "B4")
    snapshots = traced(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    failed = [s for s in snapshots if s["captured"] and s["check"]["passed"] is False]
    assert failed[0]["label"] == "G15"
    assert failed[0]["check"]["evidence"]["name"] == "no query attends to a later key"
