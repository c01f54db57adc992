"""Round twenty-three's fresh ViTs (tests/trace_fresh/ROUND23_VIT.md): our files only are committed, each folder but the
student-kind one (Andreathegm's ViT-Tiny, whose six bugs are classic, as its SOURCE.md says) plants at least three of its
bugs in a form new to the checks, and their correct code is traced where their upstream files are present beside our
own ($TRACE_FRESH_ROUND23, by default /work/fresh_round23/<folder>; this round's were built under
/work/upstream/fresh_round23/); elsewhere (CI) skipped."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import assert_no_red_verdict, our_files_only, ours, planted_bugs, upstream_driver  # noqa: F401

STUDENT, INTERLEAVED, EMBEDDING = ("Andreathegm_Vit_from_scratch", "luulecmg_vit_from_scratch_pytorch",
                                   "Bhav7_VIT_from_scratch")
FOLDERS = [STUDENT, INTERLEAVED, EMBEDDING]
STUDENT_KIND = {STUDENT}


def test_round_twenty_three_vit_folders_each_hold_our_files_only():
    assert our_files_only(23, [STUDENT], stubs=("src",)) == 6
    assert our_files_only(23, [INTERLEAVED, EMBEDDING]) == 12
    assert sorted(p.name for p in (ours(23) / STUDENT / "src").iterdir() if p.name != "__pycache__") == ["__init__.py"]


@pytest.mark.parametrize("name", [name for name in FOLDERS if name not in STUDENT_KIND])
def test_round_twenty_three_plants_at_least_three_bugs_per_vit_in_a_form_new_to_the_checks(name):
    assert sum(bug["new_form"] is True for bug in planted_bugs(ours(23) / name)) >= 3


def test_round_twenty_three_student_kind_plants_classic_bugs_only():
    assert not any(bug["new_form"] for bug in planted_bugs(ours(23) / STUDENT))


# the checks that must really run on each correct code (the first result's passed counts)
PASSED_AT_LEAST = {STUDENT: 21, INTERLEAVED: 16, EMBEDDING: 19}  # after fix23vit (13 before; 17 with S19, whose reading was taken back)
# a correct code with a FALSE red in the first result (correct code in a form the checks did not know): xfail, strict;
# the first result had none (no red verdict on any correct code, false or true)
FALSE_RED: dict[str, str] = {}


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=FALSE_RED[name]))
                                  if name in FALSE_RED else name for name in FOLDERS])
def test_round_twenty_three_vit_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    assert_no_red_verdict(upstream_driver(23, name), tmp_path / "out", PASSED_AT_LEAST[name])
