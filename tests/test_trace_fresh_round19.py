"""Round nineteen's fresh implementations, both sides (tests/trace_fresh/ROUND19_GPT.md, ROUND19_VIT.md): our files
only are committed, each folder plants at least three of its bugs in a form new to the checks (but minViT, the student
kind the round asked for: a tutorial's ViT in the catalogue's own forms, its six bugs classic ones), and their correct
code is traced where their upstream files are present beside our own (the folder `measure.py` measured:
$TRACE_FRESH_ROUND19, by default /work/fresh_round19/<folder>); elsewhere (CI: upstream code is never committed)
skipped. The round's first result had no false red; one run was refused (SPT_LSA's marker on an in-place item
assignment) and one step was green without evidence (SPT_LSA's S12, passed by a self-mask's value fitted as a bias);
the forms are held in scripts of ours by tests/test_trace_round19_forms_vit.py and test_trace_round19_forms_gpt.py."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (  # noqa: F401
    ours, our_files_only, planted_bugs, red_and_passed, traced, upstream_driver)

MINVIT, SPT_LSA, XCIT = "dmicz_minViT", "aanna0701_SPT_LSA_ViT", "branislavhesko_visual-transformers"
TAHA, DLCV, LEAP = "Taha-codes_SLMs-from-Scratch", "beimingli0626_DLCV", "mtanghu_LEAP"
FOLDERS = [MINVIT, SPT_LSA, XCIT, TAHA, DLCV, LEAP]
STUDENT_KIND = {MINVIT}  # the round's brief: its classic bugs in the author's own style, none in a new form


def test_round_nineteen_folders_each_hold_our_files_only():
    assert our_files_only(19, [MINVIT, DLCV]) == 6 + 6
    assert our_files_only(19, [SPT_LSA, XCIT], stubs=("einops",)) == 6 + 6
    assert our_files_only(19, [TAHA], stubs=("lightning", "transformers")) == 6
    assert our_files_only(19, [LEAP], stubs=("transformers",)) == 6


@pytest.mark.parametrize("name", [name for name in FOLDERS if name not in STUDENT_KIND])
def test_round_nineteen_plants_at_least_three_bugs_per_implementation_in_a_form_new_to_the_checks(name):
    bugs = planted_bugs(ours(19) / name)
    assert sum(bug["new_form"] is True for bug in bugs) >= 3


def test_round_nineteens_student_kind_implementation_says_its_bugs_are_classic():
    assert "new form" in (ours(19) / MINVIT / "SOURCE.md").read_text(encoding="utf-8").lower()
    assert not any(bug["new_form"] for bug in planted_bugs(ours(19) / MINVIT))


# the checks that must really run on each correct code (round nineteen re-measured after its fixes)
# (DLCV 34: its per-head modules' steps read from their lines' hits, head_modules.py)
PASSED_AT_LEAST = {MINVIT: 21, SPT_LSA: 15, XCIT: 10, TAHA: 23, DLCV: 34, LEAP: 18}


@pytest.mark.slow
@pytest.mark.parametrize("name", FOLDERS)
def test_round_nineteen_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    snapshots = traced(upstream_driver(19, name), tmp_path / "out", status=0)
    red, passed = red_and_passed(snapshots)
    assert not red, red
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"
