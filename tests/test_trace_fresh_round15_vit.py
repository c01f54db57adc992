"""Round fifteen's fresh ViTs (tests/trace_fresh/ROUND15_VIT.md): our files only are committed, each folder plants at
least three of its bugs in a form new to the checks, and their correct code is traced where their upstream files are
present beside our own (the folder `measure.py` measured: $TRACE_FRESH_ROUND15, by default /work/fresh_round15/<folder>);
elsewhere (CI: upstream code is never committed) skipped. The forms their first result got wrong or left unread are
held by tests/test_trace_round15_forms_vit.py; the other round-fifteen helper's GPT and encoder–decoder folders have
their own test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (  # noqa: F401
    ours, our_files_only, planted_bugs, red_and_passed, trace_report, traced, upstream_driver, with_bug)

PVT, CVT, NOTEBOOK = "whai362_PVT", "microsoft_CvT", "vfdev-5_vit-pytorch"
VITS = [PVT, CVT, NOTEBOOK]


def test_round_fifteen_vit_folders_each_hold_our_files_only():
    assert our_files_only(15, [PVT], stubs=("timm",)) == 6
    assert our_files_only(15, [CVT], stubs=("timm", "cvt", "scipy", "einops")) == 6
    assert (ours(15) / CVT / "einops").is_symlink()  # the one stand-in for einops, tests/stubs/einops
    assert {p.name for p in (ours(15) / NOTEBOOK).iterdir()} == {"SOURCE.md", "our_cells.json", "planted_bugs.json",
                                                                  "markers.json", "upstream.json"}
    for stub in (ours(15) / PVT / "timm", ours(15) / CVT / "timm", ours(15) / CVT / "scipy"):
        assert (stub / "__init__.py").read_text(encoding="utf-8").startswith('"""Ours, a stub')
    # the package our CvT driver imports upstream's two files from holds nothing else of upstream's
    assert {p.name for p in (ours(15) / CVT / "cvt").iterdir()} == {"__init__.py"}


@pytest.mark.parametrize("name", VITS)
def test_round_fifteen_plants_at_least_three_bugs_per_vit_in_a_form_new_to_the_checks(name):
    bugs = planted_bugs(ours(15) / name)
    assert all(isinstance(bug["new_form"], bool) for bug in bugs)
    assert sum(bug["new_form"] for bug in bugs) >= 3


# the checks that must really run on each correct code (after the round's fixes)
PASSED_AT_LEAST = {PVT: 16, CVT: 17, NOTEBOOK: 21}


@pytest.mark.slow
@pytest.mark.parametrize("name", VITS)
def test_round_fifteen_vits_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path,
                                                                                                 upstream_driver, name):
    red, passed = red_and_passed(traced(upstream_driver(15, name), tmp_path / "out"))
    assert red == {}
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"


# the planted bugs the first result missed, named first at their own step since the round's fixes
NAMED_SINCE = [(PVT, "B5", "S12", "1/√d missing"),
               (CVT, "B6", "S13", "softmax over the wrong axis"),
               (NOTEBOOK, "B2", "S09", "q, k and v split over the heads axis")]


@pytest.mark.slow
@pytest.mark.parametrize("name, bug_id, step, form", NAMED_SINCE)
def test_round_fifteen_bugs_are_named_first_where_their_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                   name, bug_id, step, form):
    driver = upstream_driver(15, name)
    bug = next(bug for bug in planted_bugs(driver.parent) if bug["id"] == bug_id)
    report = trace_report(with_bug(tmp_path, driver.parent, bug), tmp_path / "out", 1)
    assert report["outcome"]["first_failure"].startswith(step), report["outcome"]
    evidence = next(s["check"].get("evidence") or {} for s in report["snapshots"] if s["label"] == step)
    assert evidence.get("name") == form, evidence
