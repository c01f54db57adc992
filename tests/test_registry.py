"""A report is one folder plus one model file: the registry, declared record points, options, fallbacks."""

from __future__ import annotations

import dataclasses
import io
import re
import tokenize
from dataclasses import fields
from pathlib import Path

import pytest

from transformer_trace.cli import main, parser
from transformer_trace.report_parts import TraceSpec
from transformer_trace.reports import REPORTS
from tests.conftest import ROOT

REPORT_NAME = re.compile(r"""["'](%s)["']""" % "|".join(re.escape(key) for key in REPORTS))
# What names a report in code: its key, its folder under generator/reports/, its model module under models/.
PACKAGES = sorted(path.parent.name for path in (ROOT / "generator" / "reports").glob("*/__init__.py"))  # report folders
MODEL_FILES = {path.stem for path in (ROOT / "models").glob("*.py") if path.stem not in ("__init__", "recording", "legend")}
REPORT_WORDS = {*REPORTS, *PACKAGES, *MODEL_FILES}
DOTTED = re.compile(r"\b(?:transformer_trace\.reports|models)\.(%s)\b"
                    % "|".join(re.escape(word) for word in sorted(REPORT_WORDS)))


def names_a_report(path: Path) -> list[str]:
    """Where a generic file names a report: a quoted key, an import of (or a dotted path into) a report's folder or
    model module, or a Python name that is a report's folder or model module (``vit = ...``,
    ``from transformer_trace.models import gpt``). Comments and prose in strings (help texts, docstrings) may mention reports."""
    text = path.read_text(encoding="utf-8")
    found = [f"{path.name}: {m[0]}" for m in REPORT_NAME.finditer(text)]
    if path.suffix == ".j2":
        for expression in re.findall(r"\{\{.*?\}\}|\{%.*?%\}", text, re.S):
            found += [f"{path.name}: {word}" for word in re.findall(r"[A-Za-z_][\w-]*", expression)
                      if word in REPORT_WORDS]
        return found
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.NAME and token.string in REPORT_WORDS:
            found.append(f"{path.name}:{token.start[0]}: the name {token.string}")
        elif token.type == tokenize.STRING and (m := DOTTED.search(token.string)):
            found.append(f"{path.name}:{token.start[0]}: {m[0]}")
    return found


def test_outside_the_reports_folder_no_generator_file_names_a_report():
    """The CLI, build, landing page, PDF export, MkDocs plugin and benchmarks iterate over the registry."""
    reports_folder = ROOT / "generator" / "reports"
    places = [*(ROOT / "generator").rglob("*.py"), *(ROOT / "generator").rglob("*.j2"),
              *(ROOT / "benchmarks").rglob("*.py")]
    naming = sorted(hit for path in places if not path.is_relative_to(reports_folder) for hit in names_a_report(path))
    assert naming == [], f"these files name reports instead of using transformer_trace.reports.REPORTS: {naming}"


@pytest.mark.parametrize("line", [
    'key = "vit"', "from transformer_trace.models.vit import VisionTransformer", "import transformer_trace.models.gpt", "from transformer_trace.reports import gpt",
    "vit = dict(rows)", 'importlib.import_module("transformer_trace.reports.encoder_decoder.runner")',
])
def test_the_guard_catches_keys_imports_and_names(line, tmp_path):
    path = tmp_path / "generic.py"
    path.write_text(line + "\n", encoding="utf-8")
    assert names_a_report(path)


@pytest.mark.parametrize("key", REPORTS)
def test_the_catalogue_names_only_declared_record_points_for_every_layer(key):
    """Checked without running a model: the model declares its record points up front."""
    report = REPORTS[key]
    defaults = report.options(device="cpu")
    for layer in range(1, defaults.n_layers() + 1):
        opts = dataclasses.replace(defaults, layer=layer)
        declared = opts.record_points()
        names = {ref.name(opts.places()) for ref in report.inputs()}
        assert names <= set(declared), f"layer {layer}: not declared by the model: {sorted(names - set(declared))}"


def shape_mismatches(run, declared) -> list[str]:
    """Recorded tensors whose shape is not their declared named shape in the run's sizes (or that are not declared)."""
    from transformer_trace.catalogue import parse_dimension

    wrong = []
    for name, entry in run.recording.items():
        if name not in declared:
            wrong.append(f"{name}: not declared")
            continue
        expected = tuple(parse_dimension(axis, run.dims) for axis in declared[name].shape)
        if tuple(entry.tensor.shape) != expected:
            wrong.append(f"{name}: recorded {tuple(entry.tensor.shape)}, declared {declared[name].shape} = {expected}")
    return wrong


@pytest.mark.parametrize("key", REPORTS)
def test_a_recorded_pass_records_exactly_the_declared_points_with_their_declared_shapes(key, runs):
    run = runs[key]
    assert shape_mismatches(run, REPORTS[key].options(device="cpu").record_points()) == []


@pytest.mark.parametrize("key", REPORTS)
def test_a_changed_declared_shape_is_caught(key, runs, monkeypatch):
    """Declarations are the one source of shapes: change one (two axes swapped) and the recorded pass, the page's
    expected shape and the registry check all disagree with it."""
    from transformer_trace.render import build_pages

    run, report = runs[key], REPORTS[key]
    snap = next(s for s in report.snapshots if s.shape is None and len(set(run.declared[run.name(s.main)].shape)) > 1)
    declared = run.declared[run.name(snap.main)]
    module = run.model.get_submodule(declared.name.rsplit(".", 1)[0] if "." in declared.name else "")
    owner = next(cls for cls in type(module).__mro__
                 for attr, value in vars(cls).items() if value is declared.point)
    attribute = next(attr for attr, value in vars(owner).items() if value is declared.point)
    swapped = (declared.point.shape[-1], *declared.point.shape[1:-1], declared.point.shape[0])
    monkeypatch.setattr(owner, attribute, dataclasses.replace(declared.point, shape=swapped))

    mismatches = shape_mismatches(run, report.options(device="cpu").record_points())
    assert any(m.startswith(f"{declared.name}:") for m in mismatches), mismatches
    run.__dict__.pop("declared", None)  # the run's cached declarations, read again from the changed class
    try:
        page = next(p for p in build_pages(report, run) if p.snap is snap)
        assert not page.shape_ok
    finally:
        run.__dict__.pop("declared", None)


@pytest.mark.parametrize("key", REPORTS)
def test_every_snapshot_shape_uses_the_report_dimensions(key, runs):
    from transformer_trace.catalogue import parse_dimension
    from transformer_trace.render import named_shape

    run = runs[key]
    for snap in REPORTS[key].snapshots:
        assert all(parse_dimension(d, run.dims) >= 1 for d in named_shape(run, snap)), snap.number


@pytest.mark.parametrize("key", REPORTS)
def test_option_defaults_come_from_the_options_dataclass(key):
    from transformer_trace.arguments import build_request
    from transformer_trace.build_request import report_options

    opts = report_options(build_request(parser().parse_args(["build", "--model", key])), REPORTS)[key]
    assert opts == REPORTS[key].options()
    for f in fields(opts):
        assert getattr(opts, f.name) == f.default


def test_a_preset_choice_is_refused_by_the_parser_with_the_list_of_choices(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parser().parse_args(["build", "--vit-size", "bogus"])
    assert exit_info.value.code == 2
    message = capsys.readouterr().err.strip()
    assert "invalid choice: 'bogus'" in message and "b16" in message and "tiny" in message and "\n" not in message


@pytest.mark.parametrize("argv, message", [
    (["--seed", "99999999999999999999999"], "out of range: a seed is a whole number from 0 to 2**63 - 1"),
    (["--seed", "-1"], "out of range"),
    (["--layers", "0"], "is not a positive whole number"),
    (["--d-ff", "-5"], "is not a positive whole number"),
    (["--layer", "x"], "is not a whole number"),
])
def test_numbers_out_of_range_are_user_errors(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["build", "--out", str(tmp_path / "docs"), *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "docs").exists()


def test_every_snapshot_page_links_its_guiding_questions_and_every_question_is_linked(built_docs):
    for key, report in REPORTS.items():
        linked = set()
        for snap in report.snapshots:
            assert snap.questions, f"{key} {report.label(snap.number)} informs no guiding question"
            page = next((built_docs / key).glob(f"*/{snap.number:02d}-*.md")).read_text(encoding="utf-8")
            for number in snap.questions:
                assert f"(../questions.md#q{number})" in page, \
                    f"{key} {report.label(snap.number)}: no link to question {number}"
                linked.add(number)
        assert linked == {q.number for q in report.questions}, f"{key}: questions no snapshot links to"
        questions_page = (built_docs / key / "questions.md").read_text(encoding="utf-8")
        for question in report.questions:
            assert f"{{ #{question.anchor} }}" in questions_page


def test_a_report_without_its_own_templates_still_renders(tmp_path, runs):
    """A contributor adding a report sees pages at once: generic text stands in for missing explanations."""
    from transformer_trace.render import render_report

    base = REPORTS["encoder-decoder"]
    bare = dataclasses.replace(base, key="new-report", title="A new report", templates=None)
    pages = render_report(bare, runs["encoder-decoder"], tmp_path)
    assert len(pages) == len(base.snapshots) and all(p.check.passed for p in pages)
    first = (tmp_path / pages[0].path).read_text(encoding="utf-8")
    assert "holds" in first and "The check below recomputes it" in first
    assert "has no written answer to this question yet" in (tmp_path / "questions.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("key", REPORTS)
def test_every_snapshot_and_question_has_its_own_explanation_and_answers(key):
    """Generic text is a stand-in for a report being written, not for a finished one: remove a block and this fails."""
    from transformer_trace.render import missing_blocks

    assert missing_blocks(REPORTS[key]) == []


@pytest.mark.parametrize("key", REPORTS)
def test_the_build_names_the_snapshot_whose_explanation_falls_back(key, runs, tmp_path, caplog):
    import logging
    import re
    import shutil

    from transformer_trace import render

    report = REPORTS[key]
    snap = report.snapshots[len(report.snapshots) // 2]
    templates = tmp_path / "templates"
    shutil.copytree(report.templates, templates)
    explain = templates / "explain.md.j2"
    text = explain.read_text(encoding="utf-8")
    removed = re.sub(r"\{%% block s%d %%\}.*?\{%% endblock %%\}\n" % snap.number, "", text, flags=re.S)
    assert removed != text
    explain.write_text(removed, encoding="utf-8")
    report = dataclasses.replace(report, templates=templates)  # the same report with its templates elsewhere
    assert render.missing_blocks(report) == [f"{report.label(snap.number)} (no block s{snap.number} in explain.md.j2)"]
    with caplog.at_level(logging.WARNING, logger="transformer_trace"):
        pages = render.render_report(report, runs[key], tmp_path / "out")
    assert f"{key}: generic text stands in for 1 explanations or answers: {report.label(snap.number)}" in caplog.text
    page = next(p for p in pages if p.snap is snap)
    assert "The check below recomputes it" in (tmp_path / "out" / page.path).read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- a report is one checked object


def parts_of(report) -> dict:
    """Every part of ``report`` by name, as ``Report.declare`` takes them."""
    from transformer_trace.catalogue import Report

    return {f.name: getattr(report, f.name) for f in fields(Report)}


@pytest.mark.parametrize("key", REPORTS)
@pytest.mark.parametrize("wrong, message", [
    ("runer", "no part named 'runer'; did you mean 'runner'?"),
    ("trace_spec", "no part named 'trace_spec'; did you mean 'trace'?"),
    ("start", "no part named 'start'"),
])
def test_a_misnamed_part_is_an_error_naming_the_report_and_the_part(key, wrong, message):
    from transformer_trace.catalogue import Report
    from transformer_trace.report_parts import ReportError

    parts = parts_of(REPORTS[key]) | {wrong: None}
    with pytest.raises(ReportError, match=re.escape(f"report {key!r}: {message}")):
        Report.declare(**parts)


@pytest.mark.parametrize("key", REPORTS)
@pytest.mark.parametrize("required", ["runner", "options", "snapshots"])
def test_a_missing_required_part_is_an_error_naming_it(key, required):
    from transformer_trace.catalogue import Report
    from transformer_trace.report_parts import ReportError

    parts = parts_of(REPORTS[key])
    del parts[required]
    with pytest.raises(ReportError, match=re.escape(f"report {key!r}: required part {required} missing")):
        Report.declare(**parts)


def _main_without_seed(steps, out):
    return {}


@pytest.mark.parametrize("part, value, message", [
    ("runner", lambda report: None, "runner must be a callable run(report, opts)"),
    ("starter", "later", "starter must be None or a callable start(report, opts)"),
    ("templates", Path("/no/such/folder"), "templates must be None or the Path of an existing folder"),
    ("trace", {"keyword": "BREAKPOINT"}, "trace must be None or a transformer_trace.report_parts.TraceSpec"),
    ("trace", TraceSpec("BREAKPOINT", "G", inputs={"prompt_ids": ("tokens", 1)}), "whose inputs are name -> TraceInput"),
    ("training", _main_without_seed, "training must be None or a Training"),
    ("benchmark", object(), "benchmark must be None or a Benchmark"),
])
def test_an_optional_or_required_part_of_the_wrong_kind_is_refused_when_the_report_is_made(part, value, message):
    from transformer_trace.report_parts import ReportError

    with pytest.raises(ReportError, match=re.escape(f"report 'gpt': {part} must be")) as refused:
        dataclasses.replace(REPORTS["gpt"], **{part: value})
    assert message in str(refused.value)


def test_a_training_whose_main_does_not_take_the_command_s_arguments_is_refused():
    from transformer_trace.report_parts import ReportError, Training

    training = dataclasses.replace(REPORTS["gpt"].training, main=_main_without_seed)
    with pytest.raises(ReportError, match=r"report 'gpt': training must be None or a Training whose main is a "
                                          r"callable main\(steps, out, seed, quiet\), "
                                          r"got Training\(main=<function _main_without_seed"):
        dataclasses.replace(REPORTS["gpt"], training=training)
    assert isinstance(REPORTS["gpt"].training, Training) and callable(REPORTS["gpt"].training.main)


def test_a_misspelt_catalogue_name_is_refused_not_ignored(tmp_path):
    import types

    from transformer_trace.catalogue import Report
    from transformer_trace.report_parts import ReportError

    report = REPORTS["encoder-decoder"]
    catalogue = types.ModuleType("misspelt.catalogue")
    catalogue.__dict__.update(STAGES=report.stages, SNAPSHOTS=report.snapshots, FIGURES=report.figures,
                              QUESTIONS=report.questions, OVERVIEW_FIGURES=report.overview_figures,
                              DIMS_LEGEND=report.dims_legend, ALSO_RECORDS=report.also_record)
    identity = {k: v for k, v in parts_of(report).items() if k not in {"stages", "snapshots", "figures", "questions",
                "overview_figures", "dims_legend", "also_record", "extra_pages", "checks", "drawings"}}
    with pytest.raises(ReportError, match=r"misspelt.catalogue.ALSO_RECORDS is no catalogue part; "
                                          r"did you mean ALSO_RECORD\?"):
        Report.from_catalogue(catalogue, checks=None, **identity)
    del catalogue.ALSO_RECORDS, catalogue.QUESTIONS
    with pytest.raises(ReportError, match=r"misspelt.catalogue has no QUESTIONS"):
        Report.from_catalogue(catalogue, **identity)


def test_register_takes_only_report_objects_and_refuses_a_taken_key():
    from transformer_trace.registry import Registry
    from transformer_trace.report_parts import ReportError
    from transformer_trace.reports import register

    registry = Registry("report", REPORTS.items())
    with pytest.raises(ReportError, match="register: a report must be a transformer_trace.catalogue.Report"):
        register(parts_of(REPORTS["vit"]), registry)
    with pytest.raises(ValueError, match="two reports are named 'vit'"):
        register(REPORTS["vit"], registry)
    renamed = register(dataclasses.replace(REPORTS["vit"], key="vit-copy"), registry)
    assert list(registry) == [*REPORTS, "vit-copy"] and registry["vit-copy"] is renamed


@pytest.mark.parametrize("key", REPORTS)
def test_every_registered_report_declares_its_optional_parts_explicitly(key):
    """What a report adds is on the object, not found by file names: its folder's files and its parts agree."""
    report = REPORTS[key]
    package = next(p for p in PACKAGES if f"transformer_trace.reports.{p}." in report.runner.__module__ + ".")
    folder = ROOT / "generator" / "reports" / package
    for part, file in [("trace", "trace.py"), ("training", "training.py"), ("benchmark", "benchmark.py")]:
        assert (getattr(report, part) is not None) == (folder / file).is_file(), \
            f"{key}: {file} and its {part} part disagree"
    assert report.templates == folder / "templates"


# ----------------------------------------------------------------------------- adding a report: the How-it-works recipe

FIFTH_MODEL = '''
"""Two layers: hidden = fc(x), out = fc2(ReLU(hidden)). D: the width."""

import torch
from torch import nn

from transformer_trace.models.recording import Point, name_modules, record


class Tiny(nn.Module):
    X = Point("x", ("B", "D"), "the input")
    HIDDEN = Point("hidden", ("B", "D"), "fc(x), before the ReLU")
    OUT = Point("out", ("B", "D"), "fc2 of the ReLU of hidden")

    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.fc, self.fc2 = nn.Linear(width, width), nn.Linear(width, width)
        name_modules(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = record(self, self.HIDDEN, self.fc(record(self, self.X, x)))
        return record(self, self.OUT, self.fc2(torch.relu(hidden)))
'''

FIFTH_REPORT = '''
"""The tiny report: one object, declared from this folder's own modules."""

from dataclasses import dataclass

import torch

from transformer_trace.catalogue import Question, Report, Snapshot, Stage
from transformer_trace.checks import LinearOf
from transformer_trace.options import RunOptions
from transformer_trace.run import ModelRun
from transformer_trace.sources import ModuleRef, Ref
from tiny_model import Tiny


@dataclass(frozen=True)
class TinyConfig:
    width: int = 4


@dataclass(frozen=True)
class TinyOptions(RunOptions):
    def config(self) -> TinyConfig:
        return TinyConfig()

    def n_layers(self) -> int:
        return 1

    def layer_places(self, layer: int) -> dict[str, str]:
        return {}

    def build_model(self) -> Tiny:
        return Tiny()


def run(report: Report, opts: TinyOptions) -> ModelRun:
    from transformer_trace.models.recording import recording

    torch.manual_seed(opts.seed)
    model, x = Tiny().eval(), torch.arange(4.0).view(1, 4)
    with torch.no_grad(), recording(keep=report.names_to_record(opts)) as rec:
        model(x)
    inputs = {"x": x, "config": opts.config(), "facts": [], "summary": "x = (0, 1, 2, 3) through two layers"}
    return ModelRun(report=report, model=model, recording=rec, inputs=inputs,
                    dims={"B": 1, "D": 4}, places={}, seed=opts.seed, device="cpu")


REPORT = Report.declare(
    key="tiny", title="A tiny report", short_title="Tiny", label_format="#{n}", options=TinyOptions, runner=run,
    stages=(Stage("all", "Everything", "fc(x), then fc2 of its ReLU."),),
    snapshots=(
        Snapshot(number=1, title="Hidden", variable="h", stage="all", tensors=(Ref("hidden"),),
                 checks=(LinearOf(x=Ref("x"), module=ModuleRef("fc")),), questions=(1,)),
        Snapshot(number=2, title="Output", variable="y", stage="all", tensors=(Ref("out"),),
                 checks=(LinearOf(x=Ref("hidden"), module=ModuleRef("fc2"), activation="relu"),), questions=(1,)),
    ),
    figures=(), overview_figures=(), dims_legend={"B": "batch", "D": "width"},
    questions=(Question(1, "What does fc do?"),),
)
'''


def test_a_fifth_report_in_a_temporary_folder_is_a_model_file_one_object_and_one_registry_line(tmp_path, monkeypatch):
    """How-it-works' recipe, followed outside the project: a model file, a report package whose __init__ declares one
    Report, one line registering it; the project's own build then writes its pages and snapshots.json."""
    import json

    from transformer_trace.build import build
    from transformer_trace.progress import Progress
    from transformer_trace.registry import Registry
    from transformer_trace.reports import register

    (tmp_path / "tiny_model.py").write_text(FIFTH_MODEL, encoding="utf-8")
    (tmp_path / "tiny_report").mkdir()
    (tmp_path / "tiny_report" / "__init__.py").write_text(FIFTH_REPORT, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import tiny_report

    reports = Registry("report", REPORTS.items())  # the project's registry, copied so the test leaves it as it was
    register(tiny_report.REPORT, reports)  # the one registry line

    result = build(tmp_path / "docs", {"tiny": tiny_report.REPORT.options(device="cpu")}, Progress(enabled=False),
                   reports=reports)
    data = json.loads((tmp_path / "docs" / "tiny" / "snapshots.json").read_text(encoding="utf-8"))
    assert result.reports == ["tiny"] and result.failed_checks == []
    assert data["model"] == "tiny" and data["order"] == len(REPORTS)  # after the bundled reports, in registration order
    assert [(s["number"], s["check"]["passed"]) for s in data["snapshots"]] == [(1, True), (2, True)]
    page = (tmp_path / "docs" / "tiny" / data["snapshots"][1]["page"]).read_text(encoding="utf-8")
    assert "Output" in page and "fc2" in page
    assert "tiny" in (tmp_path / "docs" / "index.md").read_text(encoding="utf-8")
