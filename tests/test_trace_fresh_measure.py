"""tests/trace_fresh/measure.py counts, for each planted bug, beside "named first" whether it is named at its own step:
one of its `expected` snapshots fails with evidence (with the bug's `form` where planted_bugs.json gives one), whatever
failed before it, so a round whose upstream code has a true red earlier still shows whether each bug is seen."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

MEASURE = Path(__file__).resolve().parent / "trace_fresh" / "measure.py"


@pytest.fixture(scope="module")
def measure():
    spec = importlib.util.spec_from_file_location("fresh_measure", MEASURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def snapshot(label, status, evidence=None):
    passed = {"passed": True, "failed": False}.get(status)
    check = {"name": "claim", "detail": "numbers", "passed": passed, "status": status,
             **({"evidence": {"kind": "bug form", "name": evidence, "message": "why"}} if evidence else {})}
    return {"label": label, "captured": True, "check": check}


# upstream's own true red at #11 first; the bug's #31 red with its form; #33 unrecognised (not red)
SNAPSHOTS = [snapshot("#10", "passed"), snapshot("#11", "failed", "another scaling inside the softmax"),
             snapshot("#31", "failed", "computed from another tensor"), snapshot("#33", "unrecognised")]


def test_the_own_steps_that_failed_are_listed_with_their_evidence(measure):
    assert measure.own_step_evidence(SNAPSHOTS, ["#31", "#33"]) == {"#31": "computed from another tensor"}
    assert measure.own_step_evidence(SNAPSHOTS, ["#33"]) == {}  # unrecognised is not a red verdict
    assert measure.own_step_evidence(SNAPSHOTS, ["#10"]) == {}


@pytest.mark.parametrize(("found", "form", "named"), [
    ({"#31": "computed from another tensor"}, None, True),  # no form listed: any evidence at its step
    ({"#31": "computed from another tensor"}, "computed from another tensor", True),
    ({"#31": "computed from another tensor"}, ["K or V from another input", "computed from another tensor"], True),
    ({"#31": "computed from another tensor"}, "residual dropped", False),  # red at its step, but for another reason
    ({"#31": ""}, None, False),  # a failure without evidence names nothing
    ({}, None, False),
])
def test_a_bug_is_named_at_its_own_step_only_with_evidence_there(measure, found, form, named):
    assert measure.named_at_own_step(found, form) is named


def test_each_bug_gets_the_new_field_and_the_run_a_total_beside_the_old_fields(measure, tmp_path, monkeypatch,
                                                                               capsys):
    folder = tmp_path / "impl"
    folder.mkdir()
    (folder / "model.py").write_text("a = 1\nb = 2\n")
    bugs = [{"id": "B1", "file": "model.py", "old": "a = 1", "new": "a = 3", "expected": ["#31", "#33"]},
            {"id": "B2", "file": "model.py", "old": "b = 2", "new": "b = 4", "expected": "#11",
             "form": "1/√d missing"}]
    (folder / "planted_bugs.json").write_text(json.dumps(bugs))

    def fake_trace(copy, name, expected=()):
        first = "#11 Attention weights: ..."
        result = {"exit": 1, "first_failure": None if copy == folder else first, "first_evidence": None}
        return {**result, **({"own_step": measure.own_step_evidence(SNAPSHOTS, list(expected))} if expected else {})}

    monkeypatch.setattr(measure, "trace", fake_trace)
    monkeypatch.setattr(measure, "COPIES", tmp_path / "copies")
    monkeypatch.setattr(sys, "argv", ["measure.py", str(folder)])
    measure.main()
    results = json.loads(capsys.readouterr().out)
    assert (results["B1"]["named_first"], results["B1"]["named_at_own_step"]) == (False, True)
    # first failing at its own step, but with another form than the one listed: named first (the old field, as it
    # was), not named at its own step with its form
    assert (results["B2"]["named_first"], results["B2"]["named_at_own_step"]) == (True, False)
    assert results["totals"] == {"bugs": 2, "named_first": 1, "named_at_own_step": 1, "bugs_observable": 2,
                                 "named_first_observable": 1, "named_at_own_step_observable": 1,
                                 "indistinguishable": 0, "unmarked": 0}
    assert "own_step" not in results["correct"] and results["B1"]["own_step"] == {"#31": "computed from another tensor"}


def test_the_expected_steps_come_from_the_repositorys_record_of_the_folder(measure, tmp_path, monkeypatch):
    """A measured folder keeps the copy of planted_bugs.json it was built with; the committed record, where it lists
    the folder, decides which steps count (a mask bug's masked scores and probabilities alike)."""
    recorded = tmp_path / "round13" / "impl"
    recorded.mkdir(parents=True)
    (recorded / "planted_bugs.json").write_text(json.dumps([{"id": "B2", "expected": ["G13", "G14"]},
                                                            {"id": "B3", "expected": "G11"}]))
    monkeypatch.setattr(measure, "HERE", tmp_path)
    assert measure.recorded_expected(tmp_path / "elsewhere" / "impl") == {"B2": ["G13", "G14"], "B3": ["G11"]}
    assert measure.recorded_expected(tmp_path / "elsewhere" / "other") == {}


@pytest.mark.parametrize("round_dir", [MEASURE.parent / f"round{n}" for n in range(8, 14)], ids=lambda p: p.name)
def test_a_causal_mask_bug_lists_the_probabilities_step_beside_the_masked_scores(round_dir):
    """The convention for mask bugs (ROUND13_GPT.md, from round eight on): every step where the bug is observable,
    up to the probabilities, so a bug whose masked scores are not checkable is still named first where it shows."""
    for bugs in round_dir.glob("*/planted_bugs.json"):
        for bug in json.loads(bugs.read_text()):
            expected = bug["expected"] if isinstance(bug["expected"], list) else [bug["expected"]]
            if "G13" in expected:
                assert "G14" in expected, (bugs.parent.name, bug["id"])


def test_a_bug_no_marked_step_can_show_is_counted_apart_from_the_observable_ones(measure, tmp_path, monkeypatch,
                                                                                 capsys):
    """`indistinguishable` / `unmarked` in the repository's record (a measured folder's older copy lacks them) keep
    the bug in every total and out of the `*_observable` ones; the old keys keep their meaning."""
    folder = tmp_path / "measured" / "impl"
    folder.mkdir(parents=True)
    (folder / "model.py").write_text("a = 1\nb = 2\nc = 3\n")
    bugs = [{"id": "B1", "file": "model.py", "old": "a = 1", "new": "a = 3", "expected": "#11"},
            {"id": "B2", "file": "model.py", "old": "b = 2", "new": "b = 4", "expected": "#31"},
            {"id": "B3", "file": "model.py", "old": "c = 3", "new": "c = 5", "expected": "#33"}]
    (folder / "planted_bugs.json").write_text(json.dumps(bugs))
    record = tmp_path / "round15" / "impl"
    record.mkdir(parents=True)
    (record / "planted_bugs.json").write_text(json.dumps([
        bugs[0], {**bugs[1], "indistinguishable": "a correct form without the norm gives the same numbers"},
        {**bugs[2], "unmarked": "on an unmarked line whose result no marked step reads"}]))

    def fake_trace(copy, name, expected=()):  # upstream's true red at #11 first, B2's own step red with evidence
        result = {"exit": 1, "first_failure": None if copy == folder else "#11 Scores: ...", "first_evidence": None}
        return {**result, **({"own_step": measure.own_step_evidence(SNAPSHOTS, list(expected))} if expected else {})}

    monkeypatch.setattr(measure, "HERE", tmp_path)
    monkeypatch.setattr(measure, "trace", fake_trace)
    monkeypatch.setattr(measure, "COPIES", tmp_path / "copies")
    monkeypatch.setattr(sys, "argv", ["measure.py", str(folder)])
    measure.main()
    results = json.loads(capsys.readouterr().out)
    assert [results[b]["observable"] for b in ("B1", "B2", "B3")] == [True, False, False]
    assert results["B2"]["bug"]["indistinguishable"].startswith("a correct form")
    assert results["totals"] == {"bugs": 3, "named_first": 1, "named_at_own_step": 2, "bugs_observable": 1,
                                 "named_first_observable": 1, "named_at_own_step_observable": 1,
                                 "indistinguishable": 1, "unmarked": 1}


@pytest.mark.parametrize("round_dir", sorted(MEASURE.parent.glob("round*")), ids=lambda p: p.name)
def test_a_bug_said_unobservable_says_why(round_dir):
    """Each field is a reason in words, never a bare flag: a reader judges it."""
    for bugs in round_dir.glob("*/planted_bugs.json"):
        for bug in json.loads(bugs.read_text()):
            for field in ("indistinguishable", "unmarked"):
                assert field not in bug or (isinstance(bug[field], str) and len(bug[field]) > 30), (bugs, bug["id"])
