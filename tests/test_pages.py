"""One pipeline for a model run and a traced script: one page builder, one vocabulary of reports and snapshots, one
way to say which places a pass maps to, and an overview that renders data rather than asking which run it is."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from transformer_trace.catalogue import Report, Snapshot, Stage
from transformer_trace.models.legend import Legend
from transformer_trace.report_parts import ReportError
from transformer_trace.reports import REPORTS
from transformer_trace.sources import Ref
from transformer_trace.report_parts import TraceSpec

GENERATOR = Path(__file__).resolve().parent.parent / "generator"


def calls_of(name: str) -> dict[str, int]:
    """Module (relative to generator/) -> how many calls of ``name`` its code makes."""
    found = {}
    for path in GENERATOR.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and getattr(node.func, "id", getattr(node.func, "attr", None)) == name]
        if calls:
            found[str(path.relative_to(GENERATOR))] = len(calls)
    return found


def test_every_snapshot_page_is_made_in_one_place():
    assert calls_of("SnapshotPage") == {"pages.py": 1}


@pytest.mark.parametrize("template", ["overview.md.j2", "questions.md.j2"])
def test_the_overview_and_questions_templates_never_ask_whether_the_run_is_a_trace(template):
    """Their words for a model run or a trace are the run's own (overview.texts: _overview_run/_overview_trace)."""
    text = (GENERATOR / "templates" / template).read_text(encoding="utf-8")
    assert not re.search(r"{%-?\s*(if|elif)\b[^%]*\b(outcome|trace|stamp\.script|origin)\b", text)


def own_points_report(**parts) -> Report:
    snapshot = Snapshot(1, "x", "x", "points", (Ref("x"),), (), shape=("2",))
    return Report.declare(key="own", title="Own", short_title="Own", label_format="T{n:02d}",
                          stages=(Stage("points", "Points", ""),), snapshots=(snapshot,), figures=(),
                          overview_figures=(), dims_legend=Legend(), questions=(), **parts)


def test_a_scripts_own_points_are_a_report_no_model_runs_whose_snapshots_claim_nothing():
    report = own_points_report(options=None, runner=None)
    assert report.own_points and report.snapshots[0].checks == ()
    with pytest.raises(ReportError, match="made by a trace of a script"):
        report.run(None)


def test_a_report_a_model_runs_refuses_a_snapshot_without_a_claim_and_half_a_model():
    options = REPORTS["toy-vit"].options
    with pytest.raises(ReportError, match="snapshot 1 has no checks"):
        own_points_report(options=options, runner=REPORTS["toy-vit"].runner)
    with pytest.raises(ReportError, match="both None"):
        own_points_report(options=options, runner=None)
    assert not REPORTS["toy-vit"].own_points


def test_the_trace_spec_says_how_to_mark_and_nothing_about_places():
    assert [f.name for f in dataclasses.fields(TraceSpec)] == ["keyword", "letter", "example_size", "inputs"]


@pytest.mark.parametrize("key", sorted(REPORTS))
def test_a_named_pass_is_the_same_place_for_a_model_run_and_for_a_trace_of_as_many_passes(key):
    """A model run of depth d and a script that ran d passes fill every named pass with the same place."""
    from transformer_trace.trace.reading.records import places_at_layer

    report = REPORTS[key]
    opts = report.options()
    depth = opts.n_layers()
    traced = places_at_layer(report, 1, dict.fromkeys(opts.NAMED_PASSES, depth))
    assert traced is not None and {name: traced[name] for name in opts.NAMED_PASSES} == {
        name: opts.places()[name] for name in opts.NAMED_PASSES}


# ----------------------------------------------------------------------------- a page is built once, and frozen


def test_a_page_is_frozen_with_one_field_for_what_a_trace_adds():
    from transformer_trace.pages import SnapshotPage
    from transformer_trace.trace.reading.pages import Provenance

    names = [f.name for f in dataclasses.fields(SnapshotPage)]
    assert len(names) <= 14 and "provenance" in names
    assert not set(names) & {f.name for f in dataclasses.fields(Provenance)}  # a trace's facts live only there
    assert SnapshotPage.__dataclass_params__.frozen and Provenance.__dataclass_params__.frozen


def test_no_code_writes_onto_a_page_or_a_tensor_section_after_it_is_made(runs):
    from transformer_trace.render import build_pages

    page = build_pages(REPORTS["toy-vit"], runs["toy-vit"])[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        page.checks = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        page.main.catalogue = None  # type: ignore[misc]
    assert page.provenance is None  # a model run's page says nothing of a trace


TRACE_ONLY = ("marker_line", "origin", "hit_note", "layout", "marker_example", "derived_from", "not_drawn",
              "data_written", "left_out", "bound", "doc", "order", "shown_hit", "hit_values", "calls")


@pytest.mark.parametrize("template", sorted(p.name for p in (GENERATOR / "templates").glob("*.j2")))
def test_the_generic_templates_ask_a_page_only_whether_it_has_a_provenance(template):
    """Never a trace's facts one by one (``main.marker_line is not none``, ``page.origin == "recorded"``): they are
    read from ``page.provenance`` (in _snapshot_body, ``traced``), once the template knows there is one."""
    text = (GENERATOR / "templates" / template).read_text(encoding="utf-8")
    tests = re.findall(r"{%-?\s*(?:if|elif)\b([^%]*)%}", text)
    asked = [test for test in tests for name in TRACE_ONLY
             if re.search(rf"\b(page|p|main|t|pages\[0\])\.{name}\b", test)]
    assert asked == []


def test_a_captured_tensor_is_read_in_the_catalogues_layout_in_one_place_the_reading():
    """Every hit's value is read once, by the trace's reading (reading/pages.py ``read_snapshots``); the checks, the run
    and the pages use what it read."""
    assert set(calls_of("catalogue_layout")) == {"trace/reading/pages.py"}
