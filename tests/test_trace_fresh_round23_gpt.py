"""Round twenty-three's fresh GPT-style decoders and encoder–decoder (tests/trace_fresh/ROUND23_GPT.md): our files only
are committed (with our stubs: henok's `pydantic.py`, nGPT's `flash_attn.py`), each non-student folder plants at least
three of its bugs in a form new to the checks, the student-kind one (henok3878's encoder–decoder) classic bugs only,
and their correct code is traced where their upstream files are present beside our own ($TRACE_FRESH_ROUND23, by
default /work/fresh_round23/<folder>); elsewhere (CI) skipped. The round's first result: the student's code has no red
verdict; nGPT's and modded-nanogpt's correct code each had FALSE red verdicts (forms the checks did not know), mended
since (the test below says how)."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import assert_no_red_verdict, our_files_only, ours, planted_bugs, upstream_driver  # noqa: F401

STUDENT, NGPT, MODDED = "henok3878_transformer-from-scratch", "NVIDIA_ngpt", "KellerJordan_modded-nanogpt"
FOLDERS = [STUDENT, NGPT, MODDED]
STUDENT_KIND = {STUDENT}
STUBS = {"pydantic.py", "flash_attn.py"}


def test_round_twenty_three_gpt_folders_each_hold_our_files_only():
    assert our_files_only(23, FOLDERS, stubs=STUBS) == 18


def test_round_twenty_three_gpt_stubs_are_where_their_sources_say():
    assert (ours(23) / STUDENT / "pydantic.py").exists() and (ours(23) / NGPT / "flash_attn.py").exists()
    assert not (ours(23) / MODDED / "pydantic.py").exists() and not (ours(23) / MODDED / "flash_attn.py").exists()


@pytest.mark.parametrize("name", [name for name in FOLDERS if name not in STUDENT_KIND])
def test_round_twenty_three_plants_at_least_three_bugs_per_gpt_in_a_form_new_to_the_checks(name):
    assert sum(bug["new_form"] is True for bug in planted_bugs(ours(23) / name)) >= 3


def test_round_twenty_three_gpt_student_kind_plants_classic_bugs_only():
    assert not any(bug["new_form"] for bug in planted_bugs(ours(23) / STUDENT))


# the checks that must really run on each correct code (the first result's passed counts; nGPT's G08-G10 and
# modded-nanogpt's G21 pass since the false reds were mended; modded-nanogpt's G15, G16 since fix23gpt: the rotary
# family with negated angles, bfloat16 tables and a QK-norm after it, checks/rotary.py)
PASSED_AT_LEAST = {STUDENT: 36, NGPT: 7, MODDED: 16}


@pytest.mark.slow
@pytest.mark.parametrize("name", FOLDERS)
def test_round_twenty_three_gpt_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    """The first result's false reds, mended: nGPT's (a LayerNorm over the wrong axes and another tensor in a residual
    sum's place, each "fitting" within the bfloat16 tolerance: evidence is now judged at a fifth of it,
    checks/precision.py) and modded-nanogpt's G21 (ReLU², read as a gate times itself: checks/gated.py)."""
    assert_no_red_verdict(upstream_driver(23, name), tmp_path / "out", PASSED_AT_LEAST[name])
