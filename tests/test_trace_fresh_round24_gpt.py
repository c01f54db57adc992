"""Round twenty-four's fresh GPT-style decoders and encoder–decoder (tests/trace_fresh/ROUND24_GPT.md): our files only
are committed (with our stub: hlb-gpt's `tiktoken.py`), each non-student folder plants at least three of its bugs in a
form new to the checks, the student-kind one (priyangkarghosh's tllm) classic bugs only, and their correct code is
traced where their upstream files are present beside our own ($TRACE_FRESH_ROUND24, by default
/work/fresh_round24/<folder>); elsewhere (CI) skipped. The round's first result: no FALSE red on correct code; the
Informer's #28 is a TRUE red (its decoder self-attention's `mix`: the (B, L, H, D) context transposed to (B, H, L, D)
and viewed as (B, L, C), models/attn.py:159-161), asserted exactly."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import our_files_only, ours, planted_bugs, red_and_passed, traced, upstream_driver  # noqa: F401

STUDENT, HLB, INFORMER = "priyangkarghosh_tllm", "tysam-code_hlb-gpt", "zhouhaoyi_Informer2020"
FOLDERS = [STUDENT, HLB, INFORMER]
STUDENT_KIND = {STUDENT}
STUBS = {"tiktoken.py"}


def test_round_twenty_four_gpt_folders_each_hold_our_files_only():
    assert our_files_only(24, FOLDERS, stubs=STUBS) == 18


def test_round_twenty_four_gpt_stub_is_where_its_source_says():
    assert (ours(24) / HLB / "tiktoken.py").read_text(encoding="utf-8").startswith('"""Ours, a stub')
    assert not any((ours(24) / name / "tiktoken.py").exists() for name in (STUDENT, INFORMER))


@pytest.mark.parametrize("name", [name for name in FOLDERS if name not in STUDENT_KIND])
def test_round_twenty_four_plants_at_least_three_bugs_per_gpt_in_a_form_new_to_the_checks(name):
    assert sum(bug["new_form"] is True for bug in planted_bugs(ours(24) / name)) >= 3


def test_round_twenty_four_gpt_student_kind_plants_classic_bugs_only():
    assert not any(bug["new_form"] for bug in planted_bugs(ours(24) / STUDENT))


# the checks that must really run on each correct code (the first result's passed counts)
PASSED_AT_LEAST = {STUDENT: 21, HLB: 8, INFORMER: 21}
# the true deviations of upstream code, judged by hand: (step, the bug form its failure names). Informer's decoder
# self-attention is built with mix=True (models/model.py:51): AttentionLayer.forward transposes the (B, L, H, D)
# context to (B, H, L, D) before `out.view(B, L, -1)` (models/attn.py:159-161), so each row of #28 mixes positions and
# heads: the heads merged without moving the heads axis back, as upstream means it
TRUE_REDS = {INFORMER: [("#28", "heads merged without moving the axis back")]}


@pytest.mark.slow
@pytest.mark.parametrize("name", FOLDERS)
def test_round_twenty_four_gpt_correct_code_gets_no_false_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    true_reds = TRUE_REDS.get(name, [])
    snapshots = traced(upstream_driver(24, name), tmp_path / "out", status=1 if true_reds else 0)
    red, passed = red_and_passed(snapshots)
    assert sorted(red) == sorted(label for label, _ in true_reds), red
    named = {s["label"]: (s["check"].get("evidence") or {}).get("name") for s in snapshots if s["captured"]}
    assert all(named[label] == form for label, form in true_reds), named
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"
