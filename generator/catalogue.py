"""The snapshot schema every report fills in: stages, snapshots, figures, guiding questions.

A report's own catalogue (generator/reports/<report>/catalogue.py) is data in this schema. A snapshot
points at recorded tensors with ``Ref`` (generator/sources.py): record names whose placeholders stand
for the traced layer, filled from the run's options (``RunOptions.places()``): e.g. ``{enc}`` for the
traced encoder layer, ``{block}`` for the traced ViT block, and the tensors feeding them
(``{enc_prev}``, ``{block_prev}``, ...). Its checks are typed objects (generator/checks.py), its
figures typed drawings (generator/figures.py); shapes come from the model's declared record points.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from transformer_trace.checks import CHECKS, Check
from transformer_trace.figures import DRAWINGS, Drawing
from transformer_trace.registry import Registry
from transformer_trace.report_parts import (Benchmark, ReportError, Training, TraceInput, TraceSpec, catalogue_parts,
                                            check_names, check_parts)
from transformer_trace.sources import Ref

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.models.legend import Legend
    from transformer_trace.options import RunOptions
    from transformer_trace.run import ModelRun


@dataclass(frozen=True)
class Figure:
    """A figure: ``id`` is its file stem under figures/, ``drawing`` what is drawn and from which tensors."""

    id: str
    caption: str
    drawing: Drawing

    def __post_init__(self) -> None:
        if not isinstance(self.drawing, Drawing):
            raise TypeError(f"figure {self.id!r}: drawing must be a Drawing, got {self.drawing!r}")


def _bound_checks(owner: str, checks: tuple[Check, ...], main: Ref | None, claims: bool = True) -> tuple[Check, ...]:
    """``claims``: whether the owner must make at least one (a traced script's own points make none)."""
    if not isinstance(checks, tuple) or (claims and not checks) or not all(isinstance(c, Check) for c in checks):
        raise TypeError(f"{owner}: checks must be a non-empty tuple of Check objects, got {checks!r}")
    return tuple(c.bound(main) if main is not None else c for c in checks)


@dataclass(frozen=True)
class Snapshot:
    """One page: a variable of the seed report, the recorded tensors it shows, and the checks of its claim.

    ``tensors``: the first is the one the page centres on; a check field left as ``THIS`` means it.
    ``shape``: the named shape the page expects of the first tensor; by default its declared shape
    (the model's ``Point``), given only where the page shows a slice (``index``).
    ``checks`` is empty only in a report no model of ours runs (a traced script's own ``# trace:`` points, whose
    shapes are the ones observed): a catalogue's snapshot always makes a claim (``Report`` refuses one without).
    """

    number: int
    title: str
    variable: str  # as the seed report names it
    stage: str
    tensors: tuple[Ref, ...]
    checks: tuple[Check, ...]
    shape: tuple[str, ...] | None = None
    index: str | None = None  # the variable is this slice of the first tensor
    figures: tuple[str, ...] = ()
    differs: str = ""  # how this snapshot differs from the seed report's model, if it does
    questions: tuple[int, ...] = ()  # the guiding questions this snapshot informs

    def __post_init__(self) -> None:
        if not isinstance(self.tensors, tuple) or not self.tensors or not all(isinstance(t, Ref) for t in self.tensors):
            raise TypeError(f"snapshot {self.number}: tensors must be a non-empty tuple of Ref, got {self.tensors!r}")
        object.__setattr__(self, "checks", _bound_checks(f"snapshot {self.number}", self.checks, self.tensors[0],
                                                         claims=False))

    @property
    def main(self) -> Ref:
        return self.tensors[0]

    def inputs(self) -> tuple[Ref, ...]:
        """Every recorded tensor the page and its checks read."""
        return (*self.tensors, *(ref for check in self.checks for ref in check.inputs()))

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
    """A page beyond the seed's snapshots (e.g. the ViT's attention rollout), with its own checks and figures."""

    slug: str  # file name in the report folder, without .md
    title: str
    template: str  # the report's template that renders it, e.g. "rollout.md.j2"
    checks: tuple[Check, ...]
    figures: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", _bound_checks(f"page {self.slug}", self.checks, None))


@dataclass(frozen=True, kw_only=True, eq=False)  # eq=False: a report is itself (hashable, a dict key), not its value
class Report:
    """One report, complete: its identity, its catalogue (what the pages show and check), its options and the run that
    fills them, and what it optionally adds (a measurement begun ahead, tracing, training, benchmarks). Declared in its
    folder's ``__init__.py`` from explicit imports of its own modules, and every part checked here, when it is made
    (generator/report_parts.py): a missing or misnamed part is a ``ReportError`` naming it."""

    key: str  # URL folder and --model name
    title: str
    short_title: str
    label_format: str  # how the seed numbers a snapshot, e.g. "#{n}" or "S{n:02d}"
    stages: tuple[Stage, ...]
    snapshots: tuple[Snapshot, ...]
    figures: tuple[Figure, ...]
    overview_figures: tuple[str, ...]
    dims_legend: Legend
    questions: tuple[Question, ...]
    # the report's command-line options, defaults and validation; None (declared so): no model of ours runs it, a trace
    # of a script's own `# trace:` points makes its only run (generator/trace/reading/pages.py own_report)
    options: type[RunOptions] | None
    runner: Callable[[Report, RunOptions], ModelRun] | None  # run(report, opts): builds the model, records one pass
    templates: Path | None = None  # its own templates: explain.md.j2, inputs.md.j2, questions.md.j2 (each optional)
    starter: Callable[[Report, RunOptions], Callable[[], None]] | None = None  # work begun ahead (see start)
    # how `python -m transformer_trace trace` reads a script marked with its numbering
    trace: TraceSpec | None = None
    training: Training | None = None  # `python -m transformer_trace train <key>`
    benchmark: Benchmark | None = None  # its timing tables on the Benchmarks page (benchmarks/run.py)
    also_record: tuple[Ref, ...] = ()  # tensors only the explanations read
    extra_pages: tuple[ExtraPage, ...] = ()
    exploration: Any = None  # transformer_trace.tensor_data.Exploration: what the report ships as data for the explorer
    variables_from: str = "seed report"  # where the snapshots' variable names come from (the page's header table says)
    whole_values: bool = False  # pages print every value of a tensor, not a debugger's leading slice (small models)
    checks: Registry = field(default_factory=lambda: CHECKS)  # the check classes its catalogue uses: generic + its own
    drawings: Registry = field(default_factory=lambda: DRAWINGS)  # likewise the drawing classes of its figures

    @property
    def run_options(self) -> type[RunOptions]:
        """``options`` of a report our model runs (every registered report); a ReportError for a trace's own report."""
        if self.options is None:
            raise ReportError(f"report {self.key!r}: no model of ours runs it, so it takes no options")
        return self.options

    @property
    def trace_inputs(self) -> Mapping[str, TraceInput]:
        """The run inputs a trace labels from the user's tensors (its trace spec's ``inputs``; none without one)."""
        return self.trace.inputs if self.trace is not None else {}

    @property
    def trace_spec(self) -> TraceSpec:
        """``trace`` of a report a script's markers can be numbered for (trace.traceable's); a ReportError for one
        without."""
        if self.trace is None:
            raise ReportError(f"report {self.key!r}: it has no trace spec, so no marker is numbered for it")
        return self.trace

    def __post_init__(self) -> None:
        """Refuse a part that is not what it must be, a catalogue that uses a check or drawing its registries do not
        list, or one that names a figure it does not define."""
        check_parts(self.key, {f.name: getattr(self, f.name) for f in fields(self)})
        if (self.options is None) != (self.runner is None):
            raise ReportError(f"report {self.key!r}: options and runner are both None (no model of ours runs it) "
                              "or both given")
        if self.runner is not None and (unclaimed := [s.number for s in self.snapshots if not s.checks]):
            raise ReportError(f"report {self.key!r}: snapshot {unclaimed[0]} has no checks; every snapshot of a "
                              "report our model runs makes a claim")
        for owner, checks in [*((f"{self.key} snapshot {s.number}", s.checks) for s in self.snapshots),
                              *((f"{self.key} page {p.slug}", p.checks) for p in self.extra_pages)]:
            for check in checks:
                if self.checks.get(check.key()) is not type(check):
                    raise ValueError(f"{owner}: check {type(check).__name__} is not in the report's check registry")
        for fig in self.figures:
            if self.drawings.get(fig.drawing.key()) is not type(fig.drawing):
                raise ValueError(f"{self.key} figure {fig.id}: drawing {type(fig.drawing).__name__} is not in the "
                                 "report's drawing registry")
        known = {fig.id for fig in self.figures}
        for owner, ids in [*((f"snapshot {s.number}", s.figures) for s in self.snapshots),
                           *((f"page {p.slug}", p.figures) for p in self.extra_pages),
                           ("the overview", self.overview_figures)]:
            if unknown := [i for i in ids if i not in known]:
                raise ValueError(f"{self.key} {owner}: no figure {', '.join(unknown)}")

    @classmethod
    def declare(cls, **parts: Any) -> Report:
        """A report from its parts (the attributes above) by name: a name the report has no part of (a misspelling is
        told the part it is close to), or a required part left out, is a ReportError naming the report."""
        names = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
        check_names(parts.get("key", "?"), set(parts), names, required)
        return cls(**parts)

    @classmethod
    def from_catalogue(cls, catalogue: ModuleType, *, checks: Registry | None = None, drawings: Registry | None = None,
                       **parts: Any) -> Report:
        """A report from its catalogue module (STAGES, SNAPSHOTS, FIGURES, ...), the registries of its own checks and
        drawings (merged with the generic ones; a name in both is refused) and its other parts (key, title, options,
        runner, ...), as ``declare`` takes them."""
        from_module = catalogue_parts(parts.get("key", catalogue.__name__), catalogue)
        return cls.declare(**from_module, checks=CHECKS.merged(checks) if checks else CHECKS,
                           drawings=DRAWINGS.merged(drawings) if drawings else DRAWINGS, **parts)

    def label(self, number: int) -> str:
        return self.label_format.format(n=number)

    @property
    def own_points(self) -> bool:
        """Whether it is a traced script's own `# trace:` points: no model of ours runs it, its snapshots claim
        nothing."""
        return self.runner is None

    def figure(self, figure_id: str) -> Figure:
        return next(f for f in self.figures if f.id == figure_id)

    def question(self, number: int) -> Question:
        return next(q for q in self.questions if q.number == number)

    def start(self, opts: RunOptions) -> Callable[[], None]:
        """Begin what a run with ``opts`` can have measured beside the other reports' runs (its ``starter``: the GPT's
        held-out score); a function that waits until that work has ended."""
        return self.starter(self, opts) if self.starter is not None else (lambda: None)

    def run(self, opts: RunOptions, finish: bool = True) -> ModelRun:
        """Build the model, feed it the inputs of ``opts`` and record one forward pass. ``finish=False`` (the build) may
        leave work begun ahead unfinished: the run's ``finish()`` completes it."""
        if self.runner is None:
            raise ReportError(f"report {self.key!r} is made by a trace of a script, not run by a model of ours")
        run = self.runner(self, opts)
        run.options = opts
        return run.finish() if finish else run

    def names_to_record(self, opts: RunOptions) -> set[str]:
        """What a run with ``opts`` keeps: every name the pages, checks and figures read, for the traced layer,
        and what the explorer ships (every layer's attention and output)."""
        from transformer_trace.tensor_data import exploration_names

        places = opts.places()
        return {ref.name(places) for ref in self.inputs()} | set(exploration_names(self, opts.config()))

    def inputs(self) -> tuple[Ref, ...]:
        """Every recorded tensor (placeholders unfilled) the pages, checks and figures read, each once, in catalogue
        order."""
        refs = [*(ref for snap in self.snapshots for ref in snap.inputs()),
                *(ref for page in self.extra_pages for check in page.checks for ref in check.inputs()),
                *self.also_record, *(ref for fig in self.figures for ref in fig.drawing.inputs())]
        return tuple(dict.fromkeys(refs))

    def record_names(self) -> set[str]:
        """Every record name (with placeholders) the pages, checks and figures read."""
        return {ref.template for ref in self.inputs()}


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
