"""Round twenty-two's fresh GPT-style decoders and encoder–decoder (tests/trace_fresh/ROUND22_GPT.md): our files only
are committed, each folder plants at least three of its bugs in a form new to the checks (but the student-kind one the
round asked for, fudonglin's "Transformers from Scratch" encoder–decoder, whose six bugs are classic ones in its
author's style, said in its SOURCE.md), and their correct code is traced where their upstream files are present beside
our own ($TRACE_FRESH_ROUND22, by default /work/fresh_round22/<folder>); elsewhere (CI) skipped. The round's first
result had no red verdict on correct code and no internal error: modern_llm's attention sinks leave its attention
steps unrecognised and picoclvr's per-head einsum projections leave q, k and v unread, but nothing is called a bug;
since the attention sinks are read as a form (checks/sinks.py), modern_llm's mask, masked scores and context pass."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import assert_no_red_verdict, our_files_only, ours, planted_bugs, upstream_driver  # noqa: F401

STUDENT, SINKS, PICOCLVR = "fudonglin_transformer", "AymanMahfuz27_modern_llm", "morgangiraud_ffleuret_picoclvr"
FOLDERS = [STUDENT, SINKS, PICOCLVR]
STUDENT_KIND = {STUDENT}


def test_round_twenty_two_gpt_folders_each_hold_our_files_only():
    assert our_files_only(22, FOLDERS) == 18


@pytest.mark.parametrize("name", [name for name in FOLDERS if name not in STUDENT_KIND])
def test_round_twenty_two_plants_at_least_three_bugs_per_gpt_in_a_form_new_to_the_checks(name):
    assert sum(bug["new_form"] is True for bug in planted_bugs(ours(22) / name)) >= 3


def test_round_twenty_two_gpt_student_kind_plants_classic_bugs_only():
    assert not any(bug["new_form"] for bug in planted_bugs(ours(22) / STUDENT))


# the checks that must really run on each correct code (the first result's passed counts; modern_llm's four more
# since its attention sinks are read: G12, G13, G15, G16)
PASSED_AT_LEAST = {STUDENT: 28, SINKS: 20, PICOCLVR: 8}


@pytest.mark.slow
@pytest.mark.parametrize("name", FOLDERS)
def test_round_twenty_two_gpt_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    assert_no_red_verdict(upstream_driver(22, name), tmp_path / "out", PASSED_AT_LEAST[name])
