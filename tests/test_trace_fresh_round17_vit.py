"""Round seventeen's fresh ViTs (tests/trace_fresh/ROUND17_VIT.md): our files only are committed, each folder plants at
least three of its bugs in a form new to the checks, and their correct code is traced where their upstream files are
present beside our own (the folder `measure.py` measured: $TRACE_FRESH_ROUND17, by default
/work/fresh_round17/<folder>); elsewhere (CI: upstream code is never committed) skipped. The forms their first result
left unread or unnamed are held by tests/test_trace_round17_forms_vit.py; the other round-seventeen helper's GPT and
encoder–decoder folders have their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (  # noqa: F401
    ours, our_files_only, planted_bugs, red_and_passed, trace_report, traced, upstream_driver, with_bug)

CROSSVIT, T2T, TOME = ("rishikksh20_CrossViT-pytorch", "lanl_vision_transformers_explained",
                       "Ctrl408_ViT-implementations")
VITS = [CROSSVIT, T2T, TOME]


def test_round_seventeen_vit_folders_each_hold_our_files_only():
    assert our_files_only(17, [CROSSVIT], stubs=("einops",)) == 5
    assert our_files_only(17, [T2T], stubs=("timm",)) == 6
    assert our_files_only(17, [TOME]) == 6
    assert (ours(17) / CROSSVIT / "einops").is_symlink()  # the one stand-in for einops, tests/stubs/einops
    for stub in ("timm/__init__.py", "timm/layers/__init__.py"):  # the one name of timm upstream reads, ours
        assert "Ours" in (ours(17) / T2T / stub).read_text(encoding="utf-8").splitlines()[0], stub


@pytest.mark.parametrize("name", VITS)
def test_round_seventeen_plants_at_least_three_bugs_per_vit_in_a_form_new_to_the_checks(name):
    bugs = planted_bugs(ours(17) / name)
    assert all(isinstance(bug["new_form"], bool) for bug in bugs)
    assert sum(bug["new_form"] for bug in bugs) >= 3
    for field in ("indistinguishable", "unmarked"):
        assert all(isinstance(bug.get(field, ""), str) for bug in bugs)


# the checks that must really run on each correct code (after the round's fixes)
PASSED_AT_LEAST = {CROSSVIT: 14, T2T: 13, TOME: 21}


@pytest.mark.slow
@pytest.mark.parametrize("name", VITS)
def test_round_seventeen_vits_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    red, passed = red_and_passed(traced(upstream_driver(17, name), tmp_path / "out", status=0))
    assert not red, red
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"


# the planted bugs the first result missed, named first at their own step since the round's fixes
NAMED_SINCE = [(T2T, "B1", "S16", "skip term's heads merged without moving their axis"),
               (T2T, "B3", "S16", "skip term from the queries"),
               (T2T, "B5", "S12", "1/√d missing"),
               (T2T, "B6", "S19", "residual dropped"),
               (TOME, "B1", "S19", "residual dropped"),
               (TOME, "B4", "S19", "residual dropped")]


@pytest.mark.slow
@pytest.mark.parametrize("name, bug_id, step, form", NAMED_SINCE)
def test_round_seventeen_bugs_are_named_first_where_their_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                     name, bug_id, step, form):
    driver = upstream_driver(17, name)
    bug = next(bug for bug in planted_bugs(driver.parent) if bug["id"] == bug_id)
    report = trace_report(with_bug(tmp_path, driver.parent, bug), tmp_path / "out", 1)
    assert report["outcome"]["first_failure"].startswith(step), report["outcome"]
    evidence = next(s["check"].get("evidence") or {} for s in report["snapshots"] if s["label"] == step)
    assert evidence.get("name") == form, evidence
