"""Generated reports: every snapshot page, its check, its source lines, snapshots.json, and the MkDocs build."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from transformer_trace.reports import REPORTS
from tests.conftest import ROOT

ALL_SNAPSHOTS = [(key, snap.number) for key, report in REPORTS.items() for snap in report.snapshots]


SEED_TABLES = json.loads((Path(__file__).parent / "seed_snapshots.json").read_text(encoding="utf-8"))
SEED_REPORTS = ["encoder-decoder", "vit"]  # the reports the seed's snapshot tables describe (copied from shared/spec/snapshots.md)


@pytest.mark.parametrize("key", SEED_REPORTS)
def test_catalogue_keeps_the_seed_numbering_and_titles(key):
    report = REPORTS[key]
    assert [[report.label(s.number).lstrip("#"), s.title] for s in report.snapshots] == SEED_TABLES[key]


@pytest.mark.parametrize("key", REPORTS)
def test_snapshots_json_has_the_documented_schema(built_docs, key):
    data = json.loads((built_docs / key / "snapshots.json").read_text(encoding="utf-8"))
    assert data["model"] == key and data["seed"] == 7 and data["device"] == "cpu"
    assert [s["number"] for s in data["snapshots"]] == [s.number for s in REPORTS[key].snapshots]
    for snap in data["snapshots"]:
        assert isinstance(snap["number"], int) and snap["title"] and snap["variable"]
        assert all(isinstance(n, int) for n in snap["shape"])
        assert snap["dtype"] in ("float32", "int64", "bool")  # bool: the GPT's causal mask
        assert 1 <= len(snap["first"]) <= 16 and all(isinstance(v, (int, float)) or v in ("inf", "-inf", "nan") for v in snap["first"])
        assert set(snap["stats"]) == {"min", "max", "mean", "std", "nan", "inf"}
        assert (ROOT / snap["source"]["path"]).is_file() and snap["source"]["line"] > 0
        assert set(snap["check"]) == {"name", "passed", "detail"}


def documented_fields() -> tuple[dict[str, bool], dict[str, bool]]:
    """The snapshots.json fields How it works documents: (top level, per snapshot), field -> only in a trace's file."""
    text = (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8")
    section = text.split("### snapshots.json", 1)[1].split("\n## ", 1)[0]
    top, per_snapshot = section.split("Each entry of `snapshots`", 1)

    def fields(table: str) -> dict[str, bool]:
        rows = [line for line in table.splitlines() if line.startswith("| `")]
        cells = [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows]  # | `field` | type | meaning |: a trace's own field's meaning starts *trace*
        return {name: cell[2].startswith("*trace*") for cell in cells for name in re.findall(r"`(\w+)`", cell[0])}

    return fields(top), fields(per_snapshot)


def assert_documented(data: dict, traced: bool) -> None:
    """Every key of a snapshots.json is documented, and a bundled report's has none of the trace's own."""
    top, per_snapshot = documented_fields()
    assert set(data) <= set(top), set(data) - set(top)
    assert {k for k, only in top.items() if not only} <= set(data)
    for snap in data["snapshots"]:
        assert set(snap) <= set(per_snapshot), set(snap) - set(per_snapshot)
        assert snap["check"]["passed"] in (True, False, None) and set(snap["check"]) == {"name", "passed", "detail"}
    if not traced:
        assert not {k for k, only in top.items() if only} & set(data)
        assert not {k for s in data["snapshots"] for k in s if per_snapshot[k]}


@pytest.mark.parametrize("key", REPORTS)
def test_snapshots_json_fields_are_the_ones_how_it_works_documents(built_docs, key):
    assert_documented(json.loads((built_docs / key / "snapshots.json").read_text(encoding="utf-8")), traced=False)


@pytest.mark.parametrize("key, number", ALL_SNAPSHOTS)
def test_every_check_passes_on_the_default_run(built_docs, key, number):
    data = json.loads((built_docs / key / "snapshots.json").read_text(encoding="utf-8"))
    snap = next(s for s in data["snapshots"] if s["number"] == number)
    assert snap["check"]["passed"], snap["check"]["detail"]


@pytest.mark.parametrize("key, number", ALL_SNAPSHOTS)
def test_snapshot_page_shows_what_the_issue_lists(built_docs, key, number):
    data = json.loads((built_docs / key / "snapshots.json").read_text(encoding="utf-8"))
    snap = next(s for s in data["snapshots"] if s["number"] == number)
    page = (built_docs / key / snap["page"]).read_text(encoding="utf-8")
    shape = "(" + ", ".join(map(str, snap["shape"])) + ("," if len(snap["shape"]) == 1 else "") + ")"
    assert page.startswith(f"# {snap['label']} · {snap['title']}")
    assert f"`{snap['variable']}`" in page and f"`{shape}`" in page and "matches" in page
    assert f"`{snap['dtype']}` · `cpu`" in page
    assert "| min | max | mean | std | NaN | ±Inf | elements |" in page
    assert "passed" in page
    for check in snap.get("checks", [snap["check"]]):  # a snapshot with several checks shows each in its own box
        assert check["detail"] in page, check["name"]
    # The source excerpt quotes the model file with its real line numbers, the recording line highlighted.
    for block in re.finditer(r'```python linenums="(\d+)" hl_lines="(\d+)" title="([^"]+)"\n(.*?)\n```', page, re.S):
        start, highlight, path, body = int(block[1]), int(block[2]), block[3], block[4]
        lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
        assert body.splitlines() == lines[start - 1 : start - 1 + len(body.splitlines())]
        assert "record(" in lines[start + highlight - 2]
    assert re.search(r"```python linenums=", page)


@pytest.mark.parametrize("key, number", ALL_SNAPSHOTS)
def test_each_check_detects_a_corrupted_tensor(key, number, runs):
    """Change one captured value inside what the page shows: the snapshot's check must fail."""
    import dataclasses

    import torch

    from transformer_trace.indexing import parse_index

    run = runs[key]
    snap = next(s for s in REPORTS[key].snapshots if s.number == number)
    for check in snap.checks:
        target = run.name(check.inputs()[0])  # the tensor the check is about: its first tensor input
        original = run.recording[target]
        corrupted = original.tensor.clone()
        shown = torch.zeros_like(corrupted, dtype=torch.bool)
        shown[parse_index(snap.index) if snap.index and target == run.name(snap.main) else ...] = True
        if corrupted.is_floating_point():
            shown &= torch.isfinite(corrupted)
        where = tuple(shown.nonzero()[-1].tolist())  # the last shown, finite entry
        corrupted[where] = (corrupted[where] + 1) % 3 if corrupted.dtype == torch.long else corrupted[where] + 0.05
        run.recording[target] = dataclasses.replace(original, tensor=corrupted)
        run._cpu.clear()
        try:
            result = check.run(run)
            assert result.status == "failed", (type(check).__name__, result)
        finally:
            run.recording[target] = original
            run._cpu.clear()


@pytest.mark.parametrize("key", REPORTS)
def test_report_has_overview_questions_stage_indexes_and_figures(built_docs, key):
    report = REPORTS[key]
    folder = built_docs / key
    assert (folder / "index.md").read_text(encoding="utf-8").count("| [") >= len(report.snapshots)
    questions = (folder / "questions.md").read_text(encoding="utf-8")
    assert len(re.findall(r"^## \d\. .* \{ #q\d \}$", questions, re.M)) == len(report.questions)
    for stage in report.stages:
        assert (folder / stage.key / "index.md").exists()
    for fig in report.figures:
        png = folder / "figures" / f"{fig.id}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_site_builds_strictly_with_both_reports(built_site):
    assert (built_site / "encoder-decoder" / "encoder" / "07-self-attention-queries-q" / "index.html").exists()
    assert (built_site / "vit" / "block" / "13-attention-probabilities" / "index.html").exists()
    assert (built_site / "notebooks" / "record-a-forward-pass" / "index.html").exists()


@pytest.mark.parametrize("status, cell", [("passed", ":material-check-circle:{ .tt-ok } rows sum to 1"),
                                          ("failed", ":material-close-circle:{ .tt-bad } FAILED: rows sum to 1"),
                                          ("not checkable", ":material-help-circle:{ .tt-unknown } not checkable")])
def test_a_stage_pages_check_column_says_what_the_checks_status_is(status, cell):
    from types import SimpleNamespace

    import torch

    from transformer_trace.checks import CheckResult
    from transformer_trace.render import environment
    from transformer_trace.tensors import TensorView

    check = CheckResult("rows sum to 1", status == "passed", "", status=status)
    page = SimpleNamespace(label="S13", path="attention/13-probs.md", snap=SimpleNamespace(title="Attention", variable="attn"),
                           main=SimpleNamespace(shown=TensorView("p", torch.zeros(1, 2)), absent=False), captured=True, check=check,
                           variable_heading="Variable", variable_cell="`attn`")
    stage = SimpleNamespace(title="Attention", summary="")
    text = environment().get_template("stage.md.j2").render(stage=stage, pages=[page])
    row = text.strip().splitlines()[-1]
    assert row == f"| [S13](13-probs.md) | [Attention](13-probs.md) | `attn` | `(1, 2)` | {cell} |"
