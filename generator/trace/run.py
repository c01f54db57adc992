"""A traced script as the bundled templates read a run: ``TracedRun`` answers what generator/render.py and the reports'
explanation and answer blocks ask of a ``generator.run.ModelRun`` (tensor_view, source, name, inputs, dims, stamp ...)
from the tensors the script's markers captured, and raises the project's ``NotCheckable`` / ``MissingTensor`` for what
a trace does not have (the model's weights, the run's input sentence or image, a snapshot not marked).

``TraceReport`` is what the shared templates' ``{% if trace %}`` sections read (the outcome, the counts, the first
failure, the trace's Jinja environment), and what tells a block's fallback which thing the block needed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import jinja2
import torch

from generator.sources import MissingTensor, NoInput, NoWeights, NotCheckable, TensorDict, fill
from generator.tensors import TensorView
from generator.trace.checking import TensorLabel
from generator.trace.verify import layout


class MissingFact(NotCheckable, KeyError):
    """A fact (an input, a dimension) a trace does not know; also a KeyError, so a template's ``is defined`` works."""

    def __str__(self) -> str:
        return Exception.__str__(self)


class Known(dict):
    """Facts a trace knows (inputs, dimensions, the run stamp); a name it lacks is a ``MissingFact`` (in a template, a
    ``NotCheckable`` when used) naming it: ``what`` says what kind of fact it is, ``why`` why a trace has none."""

    def __init__(self, values: dict[str, Any], what: str, why: str) -> None:
        super().__init__(values)
        self.what, self.why = what, why

    def __missing__(self, key: str) -> Any:
        raise MissingFact(f"{self.what} {key}", self.why)


class TraceUndefined(jinja2.StrictUndefined):
    """StrictUndefined, except that a name missing from a trace's ``Known`` facts raises ``NotCheckable`` naming it
    (so the block that used it falls back and says what it would need)."""

    __slots__ = ()

    def __init__(self, hint: str | None = None, obj: Any = jinja2.utils.missing, name: str | None = None,
                 exc: type[Exception] = jinja2.UndefinedError) -> None:
        if isinstance(obj, Known) and name is not None:
            exc = functools.partial(lambda what, why, _message: NotCheckable(what, why), f"{obj.what} {name}", obj.why)
        super().__init__(hint, obj, name, exc)


@functools.cache
def trace_environment() -> jinja2.Environment:
    """The bundled reports' environment (same loaders, filters, templates), with TraceUndefined, and its own template
    cache (templates compiled for the bundled environment keep its Undefined)."""
    from generator.render import environment

    return environment().overlay(undefined=TraceUndefined, cache_size=400)


@functools.cache
def trace_inputs(catalogue_key: str) -> dict[str, tuple[str, Any]]:
    """The run inputs a report lets a trace stand in for with labels read from the user's own tensors
    (generator/reports/<report>/trace_inputs.py, ``TRACE_INPUTS``): input -> ("ids" | "values", snapshot number): "ID n"
    (or n) for each ID the snapshot captured; or ("vocabulary" | "classes", dimension): "ID k" / "class k" for k below
    the bound dimension. So the report's blocks still read "position 0 (“ID 3”)". Empty for a report without one."""
    import importlib
    import importlib.util

    from generator.reports import REPORTS

    report = REPORTS.get(catalogue_key)
    if report is None or importlib.util.find_spec(f"{report.package}.trace_inputs") is None:
        return {}
    return dict(importlib.import_module(f"{report.package}.trace_inputs").TRACE_INPUTS)


def id_labels(catalogue_key: str, pages: list[Any], dims: dict[str, int]) -> dict[str, list[str]]:
    """The inputs of trace_inputs() this trace can offer: those whose snapshot was captured, or whose dimension was bound."""
    by_number = {p.snap.number: p for p in pages}
    found = {}
    for key, (kind, where) in trace_inputs(catalogue_key).items():
        if kind in ("ids", "values"):
            page = by_number.get(where)
            if page is not None and page.captured and not page.main.view.tensor.is_floating_point() and page.main.view.numel:
                ids = [int(v) for v in page.main.view.tensor.flatten().tolist()]
                found[key] = [f"ID {i}" for i in ids] if kind == "ids" else ids
        elif where in dims:
            found[key] = [f"{'class' if kind == 'classes' else 'ID'} {k}" for k in range(dims[where])]
    return found


class TracedView(TensorView):
    """A TensorView of a user's tensor: an entry a report's block asks for that the user's (smaller) tensor does not
    have is a ``NotCheckable`` naming it, not an IndexError (the block falls back, saying what it needed)."""

    def _entry(self, index: tuple[int, ...]) -> torch.Tensor:
        try:
            return self.tensor[index]
        except IndexError:
            raise NotCheckable(f"entry {list(index)} of {self.name}", f"your tensor has shape {self.shape}") from None

    def _number(self, what: str, index: tuple[int, ...], read):
        """``read`` of the entry at ``index``; a value it cannot be read from (empty, boolean, complex, on the meta
        device) is NotCheckable, naming what it is, as an entry the tensor lacks."""
        try:
            return read(self._entry(index))
        except (RuntimeError, IndexError, TypeError, ValueError, NotImplementedError):
            raise NotCheckable(f"{what} of {self.name}{list(index) if index else ''}",
                               f"your tensor is {self.dtype} of shape {self.shape}") from None

    def at(self, *index: int) -> float:
        return self._number("the value", index, float)

    def row(self, *index: int) -> list[float]:
        return self._number("the values", index, lambda t: [float(x) for x in t.flatten().tolist()])

    def argmax(self, *index: int) -> int:
        return self._number("the largest entry", index, lambda t: int(t.argmax()))


INPUTS_WHY = "a trace captures your tensors, not the facts of your run's input (its sentences, words, image, vocabulary)"


@dataclass
class TracedRun:
    """The captured tensors at the hit the pages show, under the catalogue's record names and in its layouts
    (``tensors``: generator.trace.pages.catalogue_source), with what a run knows besides: the dimensions bound from the
    user's tensors, the layer (hit) shown, the run stamp. No model: modules and parameters are not checkable."""

    report: str  # the catalogue's key
    tensors: TensorDict | None
    labels: dict[str, TensorLabel]  # record name -> the snapshot that shows it
    captured: set[str]  # the labels of the snapshots captured
    markers: dict[str, str]  # snapshot label -> the marker comment that captures it
    inputs: Known
    dims: Known
    facts: dict[str, Any]  # the run stamp
    device: str
    sources: dict[str, tuple[str, int]] = field(default_factory=dict)  # record name -> the user's file and line
    options: Any = None
    weights: str = "the script's own"
    declared: dict[str, Any] = field(default_factory=dict)

    @property
    def seed(self) -> int | None:
        return self.facts.get("seed")

    def name(self, template: Any) -> str:
        return fill(str(template), self.tensors.places if self.tensors is not None else {})

    def has(self, template: Any) -> bool:
        return self.tensors is not None and self.tensors.has(template)

    def cpu(self, template: Any) -> torch.Tensor:
        name = self.name(template)
        if self.tensors is None or not self.tensors.has(name):
            label = self.labels.get(name)
            if label is None:
                raise MissingTensor(f"the tensor {name}", "no snapshot of the catalogue shows it, so a trace cannot capture it")
            if label.sliced:
                raise MissingTensor(str(label), "a page shows a slice of it, so a trace captures only that slice")
            if label.snapshot in self.captured:
                raise MissingTensor(f"snapshot {label} in the catalogue's layout", "its shape cannot be read as the catalogue's")
            raise MissingTensor(f"snapshot {label}", f"not captured; mark it with {self.markers.get(label.snapshot, 'its marker')}")
        return self.tensors.cpu(name)

    def t(self, template: Any) -> torch.Tensor:
        return self.cpu(template).double()

    def view(self, template: Any, index: str | None = None) -> torch.Tensor:
        from generator.indexing import parse_index

        tensor = self.cpu(template)
        return tensor[parse_index(index)] if index else tensor

    def tensor_view(self, template: Any, index: str | None = None) -> TensorView:
        return TracedView(self.name(template), self.view(template, index))

    def source(self, template: Any) -> tuple[str, int]:
        """The user's file and marked line that captured the tensor."""
        name = self.name(template)
        if name not in self.sources:
            self.cpu(name)  # raises, saying why, where the trace lacks the tensor
            raise MissingTensor(f"the line that computes {name}", "no marker of the script captured it")
        return self.sources[name]

    def module(self, template: Any) -> Any:
        raise NoWeights(f"module {self.name(template)}", "a trace captures tensors, not the model's weights")

    def parameter(self, template: Any) -> torch.Tensor:
        raise NoWeights(f"parameter {self.name(template)}", "a trace captures tensors, not the model's weights")

    def input(self, key: Any) -> Any:
        try:
            return self.inputs[str(key)]
        except KeyError:
            raise NoInput(f"input {key}", INPUTS_WHY) from None

    def stamp(self) -> Known:
        return Known(self.facts, "run fact", "a traced script's run stamp does not record it")

    def parameter_counts(self) -> list[tuple[str, int]]:
        raise NotCheckable("the model's parameters", "a trace captures tensors, not the model")


def canonical_view(page: Any, i: int, dims: dict[str, int], name: str) -> TensorView:
    """Tensor ``i`` of a traced page in the catalogue's layout (what the report's blocks index), or NotCheckable."""
    if not page.captured:
        raise MissingTensor(f"snapshot {page.label}", f"not captured; mark it with {page.marker_example}")
    if i >= len(page.tensors):
        raise MissingTensor(f"tensor {i + 1} of snapshot {page.label}", f"its marker captured {len(page.tensors)}")
    tensor = page.tensors[i].view.tensor
    found = page.layout if i == 0 else layout(tensor, page.shape_of(i), dims, {})
    if found is None or found.canonical is None:
        why = found.note if found is not None and found.note else "its dimensions are not all bound"
        raise NotCheckable(f"snapshot {page.label} in the catalogue's layout ({', '.join(page.shape_of(i))})",
                           f"your shape {tuple(tensor.shape)} cannot be read as it: {why}")
    return TracedView(name, found.canonical)


class BlockTensor:
    """One tensor of a BlockPage: its record name, and its view in the catalogue's layout (read when a block reads it)."""

    def __init__(self, page: Any, i: int, name: str, dims: dict[str, int]) -> None:
        self._page, self._i, self._dims, self.name = page, i, dims, name

    @functools.cached_property
    def view(self) -> TensorView:
        return canonical_view(self._page, self._i, self._dims, self.name)


class BlockPage:
    """A traced page as the report's explanation and answer blocks read a page (``page.main.view``,
    ``pages[n].tensors[1].view``, ``pages[n].label``): its tensors in the catalogue's layout, so an index the block
    writes (``x.at(0, 1, 0)``) means what it means in the bundled report."""

    def __init__(self, page: Any, dims: dict[str, int], run: TracedRun) -> None:
        self.snap, self.label, self.path = page.snap, page.label, page.path
        refs = getattr(page.snap, "tensors", ()) or ()
        count = max(len(page.tensors), len(refs), 1)
        names = [run.name(refs[i]) if i < len(refs) else page.tensors[i].name if i < len(page.tensors) else "" for i in range(count)]
        self.tensors = [BlockTensor(page, i, name, dims) for i, name in enumerate(names)]

    @property
    def main(self) -> BlockTensor:
        return self.tensors[0]


def adopt_verdicts(pages: list[Any]) -> None:
    """Every page's ``checks`` as the shared templates list them: its declared checks' results, or its one verdict."""
    for page in pages:
        page.checks = list(page.checks) or [page.check]


@dataclass
class TraceReport:
    """What the shared templates' trace sections read: title, outcome, counts, the first failure in pipeline order,
    the command; and how a block that needs what the trace lacks says so."""

    title: str
    catalogue: Any
    command: str
    counts: dict[str, int]
    outcome: dict[str, Any]
    first_failure: Any
    run: TracedRun
    explore: Any  # page -> _explore.md.j2's data
    own: bool = False  # --report none: the script's own # trace: points
    drawn: dict[str, str] = field(default_factory=dict)  # figure id -> its caption, for each figure drawn from the user's tensors
    data_limit: int = 0  # values: a larger tensor is shown on its page but left out of data/

    # What a block or a figure may lack in a trace: only the project's own "not here" (a tensor not captured, the weights,
    # an input or a fact the trace does not know). Anything else is a template or drawing bug and is raised.
    LACKS = (NotCheckable,)

    @staticmethod
    def environment() -> jinja2.Environment:
        return trace_environment()

    def block_pages(self, pages: list[Any]) -> dict[int, BlockPage]:
        return {p.snap.number: BlockPage(p, self.run.dims, self.run) for p in pages}

    @staticmethod
    def needs(exc: NotCheckable) -> str:
        """What a block needed, read from what stopped it."""
        return f"{exc.missing} ({exc.why})" if exc.why else exc.missing

    def bound(self, page: Any) -> list[str]:
        """The page's named dimensions bound from the user's tensors: "h = 4 (attention heads)"."""
        x = page.main.view
        sizes = page.layout.expected if page.layout is not None and page.layout.expected else x.shape
        named = []
        for expression, size in zip(page.shape, sizes):
            if expression.isdigit():  # a literal size (the mask's broadcast axes) names nothing
                continue
            meaning = self.catalogue.dims_legend.get(expression)
            text = f"{expression} = {size}" + (f" ({meaning})" if meaning else "")
            if text not in named:
                named.append(text)
        return named
