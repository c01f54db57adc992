"""Round twenty-two's fresh ViTs (tests/trace_fresh/ROUND22_VIT.md): our files only are committed, each folder plants at
least three of its bugs in a form new to the checks (but the student-kind one the round asked for, nicolagheza's "ViT
from Scratch", whose six bugs are classic ones in its author's style, said in its SOURCE.md), and their correct code is
traced where their upstream files are present beside our own ($TRACE_FRESH_ROUND22, by default
/work/fresh_round22/<folder>); elsewhere (CI) skipped. The round's first result had no red verdict on correct code, but
one correct code gets no verdict at all: Sora-mmh's grouped-query ViT (one module per key/value head, its query heads
stacked on axis 0) had ended the trace in an internal error (`checks/calls.py` `part_read` unpacking a 3-D one-head
projection as (B, h, N, hs)); since 4300184 it writes its report (tests/test_trace_head_modules.py holds the form)."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import assert_no_red_verdict, our_files_only, ours, planted_bugs, upstream_driver  # noqa: F401

STUDENT, DIFFERENTIAL, GQA = ("nicolagheza_ViT-from-scratch", "MohammadAmmargk8497_Differential_ViT",
                              "Sora-mmh_ViT-implementation-with-MHA-and-GQA")
FOLDERS = [STUDENT, DIFFERENTIAL, GQA]
STUDENT_KIND = {STUDENT}


def test_round_twenty_two_vit_folders_each_hold_our_files_only():
    assert our_files_only(22, [STUDENT]) == 6
    assert our_files_only(22, [DIFFERENTIAL], stubs=("torchinfo.py",)) == 6
    assert our_files_only(22, [GQA], stubs=("einops",)) == 6


@pytest.mark.parametrize("name", [name for name in FOLDERS if name not in STUDENT_KIND])
def test_round_twenty_two_plants_at_least_three_bugs_per_vit_in_a_form_new_to_the_checks(name):
    assert sum(bug["new_form"] is True for bug in planted_bugs(ours(22) / name)) >= 3


def test_round_twenty_two_student_kind_plants_classic_bugs_only():
    assert not any(bug["new_form"] for bug in planted_bugs(ours(22) / STUDENT))


# the checks that must really run on each correct code (the first result's passed counts; the GQA ViT's since its
# trace writes a report)
PASSED_AT_LEAST = {STUDENT: 18, DIFFERENTIAL: 17, GQA: 14}


@pytest.mark.slow
@pytest.mark.parametrize("name", FOLDERS)
def test_round_twenty_two_vit_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    assert_no_red_verdict(upstream_driver(22, name), tmp_path / "out", PASSED_AT_LEAST[name])
