"""Round twenty-four's fresh ViTs (tests/trace_fresh/ROUND24_VIT.md): our files only are committed, each folder but the
student-kind one (zITnEt's CIFAR-10 ViT in six modules, whose six bugs are classic, as its SOURCE.md says) plants at
least three of its bugs in a form new to the checks, and their correct code is traced where their upstream files are
present beside our own ($TRACE_FRESH_ROUND24, by default /work/fresh_round24/<folder>; this round's were built under
/work/upstream/fresh_round24/); elsewhere (CI) skipped. aashu-0's is a notebook: upstream's cells between two of ours
(`our_cells.json`)."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import assert_no_red_verdict, our_files_only, ours, planted_bugs, upstream_driver  # noqa: F401

STUDENT, PRE_LOGITS, NOTEBOOK = ("zITnEt_vit-from-scratch", "godofpdog_ViT_PyTorch", "aashu-0_ViT_From_Scratch")
FOLDERS = [STUDENT, PRE_LOGITS, NOTEBOOK]
STUDENT_KIND = {STUDENT}


def test_round_twenty_four_vit_folders_each_hold_our_files_only():
    assert our_files_only(24, [STUDENT, PRE_LOGITS]) == 12
    assert {p.name for p in (ours(24) / NOTEBOOK).iterdir()} == {"SOURCE.md", "our_cells.json", "planted_bugs.json",
                                                                 "markers.json", "upstream.json"}
    assert len(planted_bugs(ours(24) / NOTEBOOK)) == 6


@pytest.mark.parametrize("name", [name for name in FOLDERS if name not in STUDENT_KIND])
def test_round_twenty_four_plants_at_least_three_bugs_per_vit_in_a_form_new_to_the_checks(name):
    assert sum(bug["new_form"] is True for bug in planted_bugs(ours(24) / name)) >= 3


def test_round_twenty_four_student_kind_plants_classic_bugs_only():
    assert not any(bug["new_form"] for bug in planted_bugs(ours(24) / STUDENT))


# the checks that must really run on each correct code (the first result's passed counts)
PASSED_AT_LEAST = {STUDENT: 19, PRE_LOGITS: 18, NOTEBOOK: 20}
# a correct code with a FALSE red in the first result (correct code in a form the checks did not know): xfail, strict;
# the first result had none (no red verdict on any correct code, false or true)
FALSE_RED: dict[str, str] = {}


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=FALSE_RED[name]))
                                  if name in FALSE_RED else name for name in FOLDERS])
def test_round_twenty_four_vit_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    assert_no_red_verdict(upstream_driver(24, name), tmp_path / "out", PASSED_AT_LEAST[name])
