"""The snapshot schema every report fills in: stages, snapshots, figures, guiding questions.

A report's own catalogue (generator/reports/<report>/catalogue.py) is data in this schema.
Record names may hold placeholders for the traced layer, filled from the run's options
(``RunOptions.places()``): e.g. ``{enc}`` for the traced encoder layer, ``{block}`` for the
traced ViT block, and the tensors feeding them (``{enc_prev}``, ``{block_prev}``, ...).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from generator.options import RunOptions
    from generator.run import ModelRun


@dataclass(frozen=True)
class Figure:
    id: str  # file stem under figures/
    kind: str  # drawing function registered with generator.figures.drawer
    caption: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    number: int
    title: str
    variable: str  # as the seed report names it
    stage: str
    tensors: tuple[str, ...]  # record names; the first is the one the page centres on
    shape: tuple[str, ...]  # expected shape of the first tensor, in named dimensions (see parse_dimension)
    check: str
    check_args: dict[str, Any]
    index: str | None = None  # the variable is this slice of the first tensor
    figures: tuple[str, ...] = ()
    differs: str = ""  # how this snapshot differs from the seed report's model, if it does
    questions: tuple[int, ...] = ()  # the guiding questions this snapshot informs


@dataclass(frozen=True)
class Stage:
    key: str
    title: str
    summary: str


@dataclass(frozen=True)
class Question:
    number: int
    title: str

    @property
    def anchor(self) -> str:
        return f"q{self.number}"


@dataclass(frozen=True)
class ExtraPage:
    """A page beyond the seed's snapshots (e.g. the ViT's attention rollout), with its own check and figures."""

    slug: str  # file name in the report folder, without .md
    title: str
    template: str  # the report's template that renders it, e.g. "rollout.md.j2"
    check: str
    check_args: dict[str, Any]
    figures: tuple[str, ...] = ()


@dataclass(frozen=True)
class Report:
    key: str  # URL folder and --model name
    title: str
    short_title: str
    label_format: str  # how the seed numbers a snapshot, e.g. "#{n}" or "S{n:02d}"
    stages: tuple[Stage, ...]
    snapshots: tuple[Snapshot, ...]
    figures: tuple[Figure, ...]
    overview_figures: tuple[str, ...]
    dims_legend: dict[str, str]
    questions: tuple[Question, ...]
    options: type[RunOptions]  # the report's command-line options, defaults and validation
    package: str  # e.g. "generator.reports.vit": holds runner.py, checks.py, figures.py and templates/
    also_record: tuple[str, ...] = ()  # tensors only the explanations read
    extra_pages: tuple[ExtraPage, ...] = ()
    exploration: Any = None  # generator.tensor_data.Exploration: what the report ships as data for the explorer
    variables_from: str = "seed report"  # where the snapshots' variable names come from (the page's header table says)

    @classmethod
    def from_catalogue(cls, catalogue: ModuleType, **identity: Any) -> Report:
        """A report from its catalogue module (STAGES, SNAPSHOTS, FIGURES, ...) and its identity (key, title, options ...)."""
        return cls(
            stages=catalogue.STAGES, snapshots=catalogue.SNAPSHOTS, figures=catalogue.FIGURES,
            overview_figures=catalogue.OVERVIEW_FIGURES, dims_legend=catalogue.DIMS_LEGEND, questions=catalogue.QUESTIONS,
            also_record=getattr(catalogue, "ALSO_RECORD", ()), extra_pages=getattr(catalogue, "EXTRA_PAGES", ()), **identity,
        )

    def label(self, number: int) -> str:
        return self.label_format.format(n=number)

    def figure(self, figure_id: str) -> Figure:
        return next(f for f in self.figures if f.id == figure_id)

    def question(self, number: int) -> Question:
        return next(q for q in self.questions if q.number == number)

    @property
    def templates(self) -> Path:
        """The report's own templates: explain.md.j2, inputs.md.j2, questions.md.j2 (each optional)."""
        return Path(importlib.import_module(self.package).__file__).parent / "templates"

    def load(self) -> None:
        """Import the report's checks and figures, which register themselves with the generic pipeline."""
        for module in ("checks", "figures"):
            try:
                importlib.import_module(f"{self.package}.{module}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{self.package}.{module}":
                    raise

    def run(self, opts: RunOptions) -> ModelRun:
        """Build the model, feed it the inputs of ``opts`` and record one forward pass."""
        self.load()
        run = importlib.import_module(f"{self.package}.runner").run(self, opts)
        run.options = opts
        return run

    def names_to_record(self, opts: RunOptions) -> set[str]:
        """What a run with ``opts`` keeps: every name the pages, checks and figures read, for the traced layer,
        and what the explorer ships (every layer's attention and output)."""
        from generator.tensor_data import exploration_names

        places = opts.places()
        return {name.format(**places) for name in self.record_names()} | set(exploration_names(self, opts.config()))

    def record_names(self) -> set[str]:
        """Every record name (with placeholders) the pages, checks and figures read."""
        from generator.checks import TENSOR_ARGUMENTS

        self.load()
        names: set[str] = set()

        def collect(value: Any) -> None:
            if isinstance(value, str):
                names.add(value)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    collect(item)

        for snap in self.snapshots:
            collect(snap.tensors)
            for key in TENSOR_ARGUMENTS[snap.check]:
                collect(snap.check_args.get(key))
        for page in self.extra_pages:
            for key in TENSOR_ARGUMENTS[page.check]:
                collect(page.check_args.get(key))
        collect(self.also_record)
        for fig in self.figures:
            for key, value in fig.args.items():
                if key.endswith("tensor") or key.endswith("tensors"):
                    collect(value)
        return names



def parse_dimension(expression: str, dims: dict[str, int]) -> int:
    """A named dimension as catalogues write it: a number, a name, a product "a·b", or "min(a, b)"."""
    expression = expression.strip()
    if expression.startswith("min(") and expression.endswith(")"):
        return min(parse_dimension(part, dims) for part in expression[4:-1].split(","))
    if "·" in expression:
        product = 1
        for factor in expression.split("·"):
            product *= parse_dimension(factor, dims)
        return product
    if expression.isdigit():
        return int(expression)
    try:
        return dims[expression]
    except KeyError:
        raise ValueError(f"unknown dimension {expression!r}; known: {', '.join(sorted(dims))}") from None
