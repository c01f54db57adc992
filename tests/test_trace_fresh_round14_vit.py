"""Round fourteen's fresh ViTs (tests/trace_fresh/ROUND14_VIT.md): our files only are committed, each folder plants at
least three of its bugs in a form new to the checks, and their correct code is traced where their upstream files are
present beside our own (the folder `measure.py` measured: $TRACE_FRESH_ROUND14, by default /work/fresh_round14/<folder>);
elsewhere (CI: upstream code is never committed) skipped. The forms their first result got wrong or left unread are
held by tests/test_trace_round14_forms_vit.py; the other round-fourteen helper's GPT and encoder–decoder folders have
their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (  # noqa: F401
    ours, our_files_only, planted_bugs, red_and_passed, trace_report, traced, upstream_driver, with_bug)

AIM = "apple_ml-aim"
VITS = [AIM, "SHI-Labs_Compact-Transformers", "sergio_sanz_rodriguez_torchsuite"]


def test_round_fourteen_vit_folders_each_hold_our_files_only():
    assert our_files_only(14, VITS[1:]) == 10
    assert our_files_only(14, [AIM], stubs=("huggingface_hub",)) == 6  # our stand-in for an absent package
    stub = (ours(14) / AIM / "huggingface_hub" / "__init__.py").read_text(encoding="utf-8")
    assert stub.startswith('"""Ours, not upstream')


@pytest.mark.parametrize("name", VITS)
def test_round_fourteen_plants_at_least_three_bugs_per_vit_in_a_form_new_to_the_checks(name):
    bugs = planted_bugs(ours(14) / name)
    assert all(isinstance(bug["new_form"], bool) for bug in bugs)
    assert sum(bug["new_form"] for bug in bugs) >= 3


# the checks that must really run on each correct code (after the round's fixes: 15, 14 and 13 passed; after round
# fifteen's leftovers, tests/test_trace_round15_leftovers_vit.py: AIMv2's S07 and CCT's S04 too)
PASSED_AT_LEAST = {AIM: 16, "SHI-Labs_Compact-Transformers": 15, "sergio_sanz_rodriguez_torchsuite": 13}


@pytest.mark.slow
@pytest.mark.parametrize("name", VITS)
def test_round_fourteen_vits_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path,
                                                                                                 upstream_driver, name):
    red, passed = red_and_passed(traced(upstream_driver(14, name), tmp_path / "out"))
    assert red == {}
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"


# the planted bugs in new forms the first result missed, named first at their own step since the round's fixes
NAMED_SINCE = [(AIM, "B1", "S17", "the gate's activation left out"),
               (AIM, "B2", "S14", "a causal mask where none belongs"),
               ("SHI-Labs_Compact-Transformers", "B1", "S24", "softmax over the wrong axis"),
               # since round fifteen's leftovers: the tokenizer's max-pooled map read as a module kind of its own
               ("SHI-Labs_Compact-Transformers", "B2", "S04", "patch grid reshaped instead of permuted")]


@pytest.mark.slow
@pytest.mark.parametrize("name, bug_id, step, form", NAMED_SINCE)
def test_round_fourteen_new_form_bugs_are_named_first_where_their_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                            name, bug_id, step, form):
    driver = upstream_driver(14, name)
    bug = next(bug for bug in planted_bugs(driver.parent) if bug["id"] == bug_id)
    report = trace_report(with_bug(tmp_path, driver.parent, bug), tmp_path / "out", 1)
    assert report["outcome"]["first_failure"].startswith(step), report["outcome"]
    evidence = next(s["check"].get("evidence") or {} for s in report["snapshots"] if s["label"] == step)
    assert evidence.get("name") == form, evidence
