"""Round twenty's fresh implementations, both sides (tests/trace_fresh/ROUND20_GPT.md, ROUND20_VIT.md): our files
only are committed, each folder plants at least three of its bugs in a form new to the checks (but the two student-kind
ones the round asked for, RunpengJ's UCSD CSE 256 decoder and yusung410's ViT, whose bugs are classic ones in their
authors' style, said in their SOURCE.md), and their correct code is traced where their upstream files are present
beside our own ($TRACE_FRESH_ROUND20, by default /work/fresh_round20/<folder>); elsewhere (CI) skipped. The round's
first result had no false red; its one red is true: yusung410's attention never applies the scale it defines (S12,
"without the 1/√8 scaling"), judged by hand in ROUND20_VIT.md; after fix20vit a second is true: Kulbear's DeiT applies
GELU after its MLP's fc2 as well (S19, "an activation after the sublayer's output Linear"), ROUND20_VIT.md "After
fix20vit"."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (  # noqa: F401
    ours, our_files_only, planted_bugs, red_and_passed, traced, upstream_driver)

ALIBI, CSE256, OFFLINE = "jaketae_alibi", "RunpengJ_UCSD_CSE256", "dwzhang00_Offline-translation"
STUDENT_VIT, CAIT = "yusung410_Vision-Transformer-Challenge", "Justin900429_vision-transformer"
DEIT = "Kulbear_SimpleViT"
FOLDERS = [ALIBI, CSE256, OFFLINE, STUDENT_VIT, CAIT, DEIT]
STUDENT_KIND = {CSE256, STUDENT_VIT}


def test_round_twenty_folders_each_hold_our_files_only():
    assert our_files_only(20, [ALIBI, DEIT]) == 6 + 6
    assert our_files_only(20, [CSE256]) == 5
    assert our_files_only(20, [OFFLINE], stubs=("linger", "parser.py")) == 6
    assert our_files_only(20, [STUDENT_VIT], stubs=("timm",)) == 5
    assert our_files_only(20, [CAIT], stubs=("CaiT", "einops")) == 6


@pytest.mark.parametrize("name", [name for name in FOLDERS if name not in STUDENT_KIND])
def test_round_twenty_plants_at_least_three_bugs_per_implementation_in_a_form_new_to_the_checks(name):
    assert sum(bug["new_form"] is True for bug in planted_bugs(ours(20) / name)) >= 3


# the checks that must really run on each correct code (the first result's passed counts)
PASSED_AT_LEAST = {ALIBI: 14, CSE256: 20, OFFLINE: 21, STUDENT_VIT: 21, CAIT: 13, DEIT: 18}
# upstream's own bugs, judged by hand
TRUE_RED = {STUDENT_VIT: {"S12": "without the 1/√8"}, DEIT: {"S19": "adds GELU("}}


@pytest.mark.slow
@pytest.mark.parametrize("name", FOLDERS)
def test_round_twenty_correct_code_gets_no_red_verdict_but_upstreams_own_bug_where_its_files_are_present(
        tmp_path, upstream_driver, name):
    expected = TRUE_RED.get(name, {})
    snapshots = traced(upstream_driver(20, name), tmp_path / "out", status=1 if expected else 0)
    red, passed = red_and_passed(snapshots)
    assert set(red) == set(expected), red
    assert all(said in red[label] for label, said in expected.items()), red
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"
