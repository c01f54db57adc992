"""Round sixteen's fresh ViTs (tests/trace_fresh/ROUND16_VIT.md): our files only are committed, each folder plants at
least three of its bugs in a form new to the checks, and their correct code is traced where their upstream files are
present beside our own (the folder `measure.py` measured: $TRACE_FRESH_ROUND16, by default /work/fresh_round16/<folder>);
elsewhere (CI: upstream code is never committed) skipped. The forms their first result left unread are held by
tests/test_trace_round16_forms_vit.py; the other round-sixteen helper's GPT and encoder–decoder folders have their own
test file."""

from __future__ import annotations

import pytest

from tests.fresh_rounds import (  # noqa: F401
    ours, our_files_only, planted_bugs, red_and_passed, trace_report, traced, upstream_driver, with_bug)

SWIN, TWINS, NOTEBOOK = ("berniwal_swin-transformer-pytorch", "rosinality_vision-transformers-pytorch",
                         "shreydan_scratchformers")
VITS = [SWIN, TWINS, NOTEBOOK]


def test_round_sixteen_vit_folders_each_hold_our_files_only():
    assert our_files_only(16, [SWIN], stubs=("einops",)) == 6
    assert our_files_only(16, [TWINS], stubs=("models", "tensorfn", "pydantic")) == 6
    for name in (SWIN, NOTEBOOK):
        assert (ours(16) / name / "einops").is_symlink()  # the one stand-in for einops, tests/stubs/einops
    assert {p.name for p in (ours(16) / NOTEBOOK).iterdir()} == {"SOURCE.md", "our_cells.json", "planted_bugs.json",
                                                                  "markers.json", "upstream.json", "einops"}
    # the package our Twins driver imports upstream's two files from holds nothing of upstream's
    assert {p.name for p in (ours(16) / TWINS / "models").iterdir()} == {"__init__.py"}
    for stub in ("tensorfn/__init__.py", "tensorfn/config.py", "pydantic/__init__.py", "models/__init__.py"):
        assert "Ours" in (ours(16) / TWINS / stub).read_text(encoding="utf-8").splitlines()[0], stub


@pytest.mark.parametrize("name", VITS)
def test_round_sixteen_plants_at_least_three_bugs_per_vit_in_a_form_new_to_the_checks(name):
    bugs = planted_bugs(ours(16) / name)
    assert all(isinstance(bug["new_form"], bool) for bug in bugs)
    assert sum(bug["new_form"] for bug in bugs) >= 3
    assert all(isinstance(bug.get("indistinguishable", ""), str) for bug in bugs)


# the checks that must really run on each correct code (after the round's fixes)
PASSED_AT_LEAST = {SWIN: 8, TWINS: 6, NOTEBOOK: 15}
# upstream's own bug, a true red: the notebook's attention has no softmax (SOURCE.md)
TRUE_RED = {NOTEBOOK: {"S13"}}


@pytest.mark.slow
@pytest.mark.parametrize("name", [SWIN, TWINS, NOTEBOOK])
def test_round_sixteen_vits_correct_code_gets_no_false_red_verdict_where_its_upstream_files_are_present(
        tmp_path, upstream_driver, name):
    # exit 1 where upstream has its own bug (a true red), else 0
    red, passed = red_and_passed(traced(upstream_driver(16, name), tmp_path / "out", status=int(name in TRUE_RED)))
    assert set(red) <= TRUE_RED.get(name, set()), red
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"


# the planted bugs the first result missed, named first at their own step since the round's fixes
NAMED_SINCE = [(SWIN, "B6", "S16", "residual dropped"),
               (NOTEBOOK, "B2", "S03", "pixels a grid apart, not a patch"),
               # helper leftovers17's conditional position encoding (ROUND16_VIT.md, "Leftovers")
               (TWINS, "B3", "S07", "position encoding on the transposed grid")]


@pytest.mark.slow
@pytest.mark.parametrize("name, bug_id, step, form", NAMED_SINCE)
def test_round_sixteen_bugs_are_named_first_where_their_upstream_files_are_present(tmp_path, upstream_driver,
                                                                                   name, bug_id, step, form):
    driver = upstream_driver(16, name)
    bug = next(bug for bug in planted_bugs(driver.parent) if bug["id"] == bug_id)
    report = trace_report(with_bug(tmp_path, driver.parent, bug), tmp_path / "out", 1)
    assert report["outcome"]["first_failure"].startswith(step), report["outcome"]
    evidence = next(s["check"].get("evidence") or {} for s in report["snapshots"] if s["label"] == step)
    assert evidence.get("name") == form, evidence
