"""The trace's reading of a capture and its pages: each snapshot of the chosen catalogue (captured or not) read once
into a frozen ``SnapshotReading`` (``read_snapshots``, for the capture's one reading, capture_reading.py ``read``: the
user's tensors at the hit the pages show and at every hit, their named shapes, each read in the catalogue's layout,
the dimensions they bind, the module calls of the marked lines), which the checks (checking.py), the run (run.py) and
the drawings read; then what each page shows
(``traced_contents``, for the one page builder, generator/pages.py ``snapshot_pages``): the reading, its verdicts and
figures, and its ``Provenance``, all known before the page is made."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from transformer_trace.catalogue import Report, Snapshot, Stage
from transformer_trace.sources import NotCheckable, Ref, TensorDict
from transformer_trace.pages import CapturedTensors, DictEntry, PageContents, PageTensors, SourceExcerpt, TensorSection
from transformer_trace.tensors import TensorView
from transformer_trace.text import fence_title
from transformer_trace.trace.reading.call_layout import catalogue_order
from transformer_trace.trace.reading.capture import Capture, Hit, ModuleCall, Value
from transformer_trace.trace.markers import Marker
from transformer_trace.trace.reading.declared import bound_names, declared_docs, declared_shapes
from transformer_trace.trace.reading.feeders import traced_back
from transformer_trace.trace.reading.operand_order import Order, catalogue_orders
from transformer_trace.trace.reading.called_names import read_calls
from transformer_trace.trace.reading.shared_lines import by_caller
from transformer_trace.trace.notebook import cell_of, notebook_name, place
from transformer_trace.trace.reading.run_layout import RunLayout, catalogue_layout, read_run_layout, step_shapes
from transformer_trace.trace.reading.verify import Layout, LayoutStatus
from transformer_trace.models.legend import Legend

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.checking import Judgement

DATA_LIMIT = 4_000_000  # elements: larger tensors are summarised on their page but not shipped in data/


def marker_example(catalogue: Report, numbering: str, number: int) -> str:
    spec = catalogue.trace
    return spec.marker(number, catalogue.label(number)) if spec is not None else "# trace: name"


def own_points(captured: Mapping[Marker, list[Hit]], markers: Sequence[Marker]) -> dict[str, int]:
    """`# trace: name` points numbered in the order the script first reached them (``captured``: each marker's hits),
    then the ones it never reached (in the order they are written: a page that says so, not a point that silently
    vanishes)."""
    first: dict[str, int] = {}
    for marker, hits in captured.items():
        if marker.point:
            first[marker.point] = min(first.get(marker.point, hits[0].order), hits[0].order)
    never = [m.point for m in sorted(markers, key=lambda m: (m.file, m.line))
             if m.point and m.point not in first]
    reached = sorted(first, key=lambda point: first[point])
    return {point: i for i, point in enumerate([*reached, *dict.fromkeys(never)], 1)}


OWN_POINTS = Stage("points", "Your points", "The values marked with # trace: comments, in the order the script reached "
                  "them.")


def own_report(capture: Capture) -> Report:
    """The script's own `# trace:` points as a report (for `--report none`): one stage, a snapshot per point (its record
    name the point's, its named shape the one observed), no checks, and no model of ours that runs it."""
    shapes = {}
    for marker, hits in capture.hits.items():
        if marker.point and marker.point not in shapes:
            tensor, _ = _tensor_of(hits[0].values[0])
            shapes[marker.point] = tuple(str(n) for n in (tensor.shape if tensor is not None else ()))
    snapshots = tuple(Snapshot(number, point, point, OWN_POINTS.key, (Ref(point),), (), shape=shapes.get(point, ()))
                      for point, number in own_points(capture.hits, capture.markers).items())
    return Report.declare(key="trace", title="Your own trace points", short_title="Trace", label_format="T{n:02d}",
                          stages=(OWN_POINTS,), snapshots=snapshots, figures=(), overview_figures=(),
                          dims_legend=Legend(), questions=(), options=None, runner=None)


def _code_block(source: str, first: int, last: int, shown: str, within: tuple[int, int] | None = None) -> str:
    """The marked statement with a few lines around it; ``within``: a notebook cell's script lines, numbered from 1."""
    lines = source.splitlines()
    low, high = within or (1, len(lines))
    start, stop = max(1, first - 6, low), min(len(lines), last + 3, high)
    while start < first and not lines[start - 1].strip():
        start += 1
    while stop > last and not lines[stop - 1].strip():
        stop -= 1
    text = "\n".join(lines[start - 1:stop])
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", text)), default=0))
    highlight = f"{first - start + 1}" + (f"-{last - start + 1}" if last > first else "")
    title = fence_title(shown)
    number = start - low + 1 if within else start
    return f'{fence}python linenums="{number}" hl_lines="{highlight}" title="{title}"\n{text}\n{fence}'


def in_layer_loop(snap: Snapshot) -> bool:
    """Whether the catalogue records the step once per layer (its record names have a layer placeholder): --hit N
    counts those; a step outside the loop runs once a forward pass (a second hit is another use: the target sentence
    through the source's embedding code)."""
    return any("{" in str(ref) for ref in getattr(snap, "tensors", ()))


def _hit(hits: list[Hit], wanted: int) -> tuple[Hit, str]:
    if wanted <= len(hits):
        return hits[wanted - 1], f"hit {wanted} of {len(hits)}"
    return hits[-1], f"hit {len(hits)} of {len(hits)} (the line ran fewer than the {wanted} times --hit asked for)"


def _tensor_of(value: Value) -> tuple[torch.Tensor | None, str]:
    if value.kind == "dict":
        key, tensor = next(iter(value.tensor.items()))
        left_out = value.note.removeprefix("a dict of tensors") if value.note.startswith("a dict of tensors") else ""
        return tensor, (f"a dict of {len(value.tensor)} tensors{left_out}; its first entry {key!r} is what the checks "
                        "read, and every entry is listed below its values (all are in data/)")
    if value.tensor is None:
        return None, value.note
    return value.tensor, value.note  # what it was converted from (a NumPy array, a sparse tensor), if anything


def in_catalogue_order(snap: Snapshot, marked: list[tuple[Marker, list[Hit]]]) -> list[tuple[Marker, list[Hit]]]:
    """Several lines marked with one snapshot of several tensors (``q_heads, k_heads, v_heads``), in the order of the
    catalogue's variables where each line's name names one of them (``k`` -> ``k_heads``), whatever order the script
    assigns them in; else in line order."""
    variables = snap.variable.split(", ")
    if len(marked) < 2 or len(marked) != len(variables):
        return marked

    def position(marker: Marker) -> int | None:
        found = [i for i, v in enumerate(variables)
                 if marker.names and (v == marker.names[0] or v.startswith(marker.names[0] + "_"))]
        return found[0] if len(found) == 1 else None
    places = [place for marker, _ in marked if (place := position(marker)) is not None]
    if len(places) != len(marked) or len(set(places)) != len(places):
        return marked
    return [entry for _, entry in sorted(zip(places, marked), key=lambda pair: pair[0])]


def marked_snapshots(catalogue: Report, markers: Sequence[Marker], captured: Mapping[Marker, list[Hit]],
                     numbering: str, notices: list[str],
                     told_apart: list[str],
                     misfed: dict[int, str] | None = None) -> dict[int, list[tuple[Marker, list[Hit]]]]:
    """Snapshot number -> the marked lines that captured it, each with its hits (in line order; ``captured``: each
    marker's hits): the markers of the chosen numbering (a line shared by several snapshots split by its callers), or
    the script's own points."""
    by_number: dict[int, list[tuple[Marker, list[Hit]]]] = {}
    points = own_points(captured, markers) if numbering == "none" else {}
    for marker in sorted(markers, key=lambda m: (m.file, m.line)):
        if marker in captured and numbering == "none" and marker.point:
            by_number.setdefault(points[marker.point], []).append((marker, captured[marker]))
        elif marker in captured and marker.numbering == numbering and marker.alternatives:
            for alternative, hits in by_caller(marker, captured[marker], catalogue, notices, told_apart, misfed):
                by_number.setdefault(_numbered(alternative), []).append((alternative, hits))
        elif marker in captured and marker.numbering == numbering:
            by_number.setdefault(_numbered(marker), []).append((marker, captured[marker]))
    return by_number


def _numbered(marker: Marker) -> int:
    """The snapshot a marker of a report's numbering names (markers.py sets ``number`` for every such marker, and
    by_caller for each alternative; only a `# trace:` point has none)."""
    assert marker.number is not None, f"{marker.text!r}: a marker of {marker.numbering} without a number"
    return marker.number


@dataclass(frozen=True)
class MarkedLineCalls:
    """The module calls one marked line of a snapshot made, at every hit (``at_hits``; none past the hit shown: the
    child copies none, trace/__init__.py ``calls_at``), and which hit its page shows (``shown``, counted from 1)."""

    at_hits: tuple[tuple[ModuleCall, ...], ...]
    shown: int

    def read_in(self, run: RunLayout) -> MarkedLineCalls:
        """Its calls read in the run's one layout (run_layout.py ``RunLayout.turned_call``)."""
        return MarkedLineCalls(tuple(tuple(map(run.turned_call, calls)) for calls in self.at_hits), self.shown)


class _MarkedLines:
    """A snapshot's module calls as its marked lines (``lines``) made them, kept once: those the checks read (at the hit
    shown) and each tensor's line's at every hit are both read from the lines' own."""

    lines: tuple[MarkedLineCalls, ...]
    tensor_lines: tuple[int, ...]

    @cached_property
    def calls(self) -> tuple[ModuleCall, ...]:
        """The module calls its line(s) made at the hit shown, line after line: what weight-aware checks read
        (generator/trace/reading/weights.py)."""
        return tuple(call for line in self.lines for call in line.at_hits[line.shown - 1])

    @property
    def shown_hit(self) -> int:
        """Which hit of its (first) marked line it shows."""
        return self.lines[0].shown if self.lines else 1

    @cached_property
    def hit_calls(self) -> tuple[tuple[tuple[ModuleCall, ...], ...], ...]:
        """Per tensor: its line's module calls at every hit."""
        return tuple(self.lines[line].at_hits for line in self.tensor_lines)


@dataclass(frozen=True)
class SnapshotReading(_MarkedLines, PageTensors):
    """One snapshot of the catalogue as a capture shows it, read once (``read_snapshots``): the user's values at the hit
    the pages show, each read in the catalogue's layout, and at every hit; the marked lines' code and module calls; the
    named shape and the dimensions it binds. What the checks (checking.py), the run (run.py ``traced_run``) and the
    drawings read, and what its page is built from (``traced_contents``)."""

    report: Report
    snap: Snapshot
    tensors: CapturedTensors
    named_shape: tuple[str, ...]
    named: tuple[tuple[str, ...] | None, ...]  # the named shape of each of its tensors, where given
    marker_example: str  # how to mark it, where the script did not
    doc: str  # what the catalogue's model declares its tensor to be
    hit_note: str = ""  # which hit of a line run several times it shows
    layouts: tuple[Layout, ...] = ()  # how each tensor's shape (at the hit shown) reads as its named one
    bound: tuple[str, ...] = ()  # named dimensions bound from its tensors: "h = 4 (heads)"
    order: int = 0  # its place in the order the script ran
    hit_values: tuple[tuple[torch.Tensor | None, ...], ...] = ()  # per tensor: its value at every hit
    # per tensor: its value at every hit read in the catalogue's layout (None: no value, or none of a record's)
    hit_layouts: tuple[tuple[Layout | None, ...], ...] = ()
    lines: tuple[MarkedLineCalls, ...] = ()  # per marked line: its module calls at every hit, in the run's layout
    tensor_lines: tuple[int, ...] = ()  # per tensor: which of ``lines`` captured it
    run: RunLayout = RunLayout()  # the run's one layout, in which its module calls are read
    # the axis order its checks read its module calls' tensors in, as its first tensor (in the run's layout) was read in
    # the catalogue's: sequence-first heads, say (call_layout.py ``catalogue_order``); None where alike
    call_order: tuple[int, ...] | None = None

    @property
    def captured(self) -> bool:
        return bool(self.tensors)

    @property
    def main_as_called(self) -> torch.Tensor:
        """Its first tensor in the layout its module calls are read in (``calls``: the run's, run_layout.py)."""
        tensor = self.run.as_called(self.main.shown.tensor)
        assert tensor is not None
        return tensor

    @property
    def layout(self) -> Layout | None:
        """How its first tensor's shape reads as the named one: what its page says of its shape (None: not
        captured)."""
        return self.layouts[0] if self.layouts else None


@dataclass(frozen=True)
class _Held:
    """One value a marked line held at the hit shown, as the capture gave it: what its page's tensor section is built
    from, once, when the value has been read in the catalogue's layout (``_section``)."""

    name: str  # its file under data/: "<snapshot number>_<variable>"
    variable: str
    tensor: torch.Tensor  # an empty one where the value is no tensor (``absent``)
    note: str
    absent: bool
    device: str
    source: SourceExcerpt
    marker_line: int
    marked_at: str
    entries: tuple[tuple[object, torch.Tensor], ...]  # a dict of tensors: every entry


@dataclass(frozen=True)
class _Marked(_MarkedLines):
    """A snapshot's marked lines at the hit shown, before its values are read in the catalogue's layout (that needs the
    dimensions every snapshot's tensors bind together)."""

    report: Report
    snap: Snapshot
    held: tuple[_Held, ...]
    named_shape: tuple[str, ...]
    named: tuple[tuple[str, ...] | None, ...]
    hit_note: str
    order: int
    hit_values: tuple[tuple[torch.Tensor | None, ...], ...]
    lines: tuple[MarkedLineCalls, ...]
    tensor_lines: tuple[int, ...]

    @property
    def label(self) -> str:
        return self.report.label(self.snap.number)

    def shape_of(self, i: int) -> tuple[str, ...]:
        named = self.named[i] if i < len(self.named) else None  # as a page reads it (PageTensors.shape_of)
        return named or self.named_shape

    def shown_at(self, k: int) -> int:
        """Which hit of its line value ``k`` shows (counted from 0)."""
        return self.lines[self.tensor_lines[k]].shown - 1

    @property
    def records(self) -> tuple[Ref, ...]:
        """Its record names, in the catalogue's order."""
        return self.snap.tensors

    @property
    def operands(self) -> tuple[torch.Tensor | None, ...]:
        """Its values at the hit shown, as marked (None: no tensor, or an empty one): operand_order.py orders them."""
        return tuple(None if h.absent or not h.tensor.numel() else h.tensor for h in self.held)

    @property
    def names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The catalogue's variables and the script's names of its values, as marked (operand_order.py reads both)."""
        return tuple(self.snap.variable.split(", ")), tuple(h.variable for h in self.held)

    def in_order(self, order: Order) -> _Marked:
        """Its tensors read in ``order`` (indexes into ``held``: operand_order.py ``catalogue_orders``)."""
        if order == tuple(range(len(self.held))):
            return self
        return replace(self, held=tuple(self.held[i] for i in order),
                       hit_values=tuple(self.hit_values[i] for i in order),
                       tensor_lines=tuple(self.tensor_lines[i] for i in order))


def _marked(catalogue: Report, numbering: str, capture: Capture, hit: int,
            marked: dict[int, list[tuple[Marker, list[Hit]]]]) -> Callable[[Snapshot], _Marked]:
    """What each snapshot's marked lines (``marked``) held at the hit shown and at every hit, with their code and
    module calls."""
    shapes = declared_shapes(catalogue)

    def of(snap: Snapshot) -> _Marked:
        notes, wanted = [], hit if numbering == "none" or in_layer_loop(snap) else 1  # own points: no layer loop known
        held: list[_Held] = []
        hit_values: list[tuple[torch.Tensor | None, ...]] = []
        lines: list[MarkedLineCalls] = []
        tensor_lines: list[int] = []
        order = 0
        for j, (marker, hits) in enumerate(in_catalogue_order(snap, marked.get(snap.number, []))):
            chosen, note = _hit(hits, wanted)
            notes.append(note if wanted == hit or len(hits) == 1 else
                         f"{note}: a step outside the layer loop, which --hit does not count (its other hits are "
                         "another use of the line, in data/)")
            hit_values += [tuple(_tensor_of(h.values[k])[0] if k < len(h.values) else None for h in hits)
                           for k in range(len(chosen.values))]
            # (with the calls of the statements feeding it, and the products with parameter matrices: called_names.py)
            text = capture.sources.get(marker.file, "")
            traced = traced_back(text, marker.first, marker.last)
            lines.append(MarkedLineCalls(tuple(read_calls(h.calls, [_tensor_of(v)[0] for v in h.values], text,
                                                          marker.first, marker.last, traced) for h in hits),
                                         min(wanted, len(hits))))
            tensor_lines += [j] * len(chosen.values)
            order = min(order or chosen.order, chosen.order)
            held += _held(snap, marker, chosen, capture)
        return _Marked(catalogue, snap, tuple(held), shapes[snap.number][0] or (), shapes[snap.number],
                       "; ".join(dict.fromkeys(notes)), order, tuple(hit_values),
                       tuple(lines), tuple(tensor_lines))

    return of


def _held(snap: Snapshot, marker: Marker, chosen: Hit, capture: Capture) -> list[_Held]:
    """The values one marked line held at the hit shown, with the line's code (a notebook's: its cell and line)."""
    try:
        shown = str(Path(marker.file).relative_to(capture.script.parent))
    except ValueError:
        shown = Path(marker.file).name
    text = capture.sources[marker.file]
    shown, cell = notebook_name(text) or shown, cell_of(text, marker.first)  # a notebook's: cell and line
    at = place(text, shown, marker.first, marker.last) if cell else ""
    source = SourceExcerpt(shown, marker.first, marker.first, [], marker.last, _code_block(
        text, marker.first, marker.last, at or shown, cell[2:] if cell else None), at)
    held = []
    for value in chosen.values:
        tensor, note_text = _tensor_of(value)
        absent = tensor is None
        if tensor is None:
            tensor, note_text = torch.zeros(0), f"`{value.name}` is {note_text}"
        held.append(_Held(f"{snap.number:02d}_{value.name}", value.name, tensor, note_text, absent, value.device,
                          source, marker.line, place(text, shown, marker.line),
                          tuple(value.tensor.items()) if value.kind == "dict" else ()))
    return held


def _section(marked: _Marked, k: int, held: _Held, found: Layout) -> TensorSection:
    """Value ``k`` of a snapshot as its page shows it, built once: as the script held it, and in the catalogue's layout
    (``found``), or why it cannot be read so."""
    view = TensorView(held.name, held.tensor)
    index, slice_text = view.slice_text()
    return TensorSection(name=view.name, shown=view, index=None, device=held.device, source=held.source,
                         slice_index=index, slice_text=slice_text, variable=held.variable,
                         marker_line=held.marker_line, note=held.note, marked_at=held.marked_at, absent=held.absent,
                         catalogue=_in_catalogue_layout(marked, k, held, found),
                         entries=tuple(DictEntry.of(key, entry) for key, entry in held.entries))


def read_snapshots(catalogue: Report, numbering: str, capture: Capture, hit: int,
                   marked_lines: dict[int, list[tuple[Marker, list[Hit]]]],
                   ) -> tuple[list[SnapshotReading], dict[str, int], RunLayout]:
    """Each snapshot of the catalogue as its marked lines (``marked_lines``: marked_snapshots) show it, in the
    catalogue's order, the dimensions its tensors bind and the run's one layout: every captured tensor read in the
    catalogue's layout once, here, in the run's layout decided from every captured step together (run_layout.py
    ``read_run_layout``, ``catalogue_layout``). Called by the reading of the capture (capture_reading.py ``read``)
    only."""
    of = _marked(catalogue, numbering, capture, hit, marked_lines)
    as_marked = [of(snap) for snap in catalogue.snapshots]
    marked = [m.in_order(order) for m, order in zip(as_marked, catalogue_orders(as_marked))]  # names in any order
    run = read_run_layout(step_shapes(marked), catalogue.dims_legend, [call for m in marked for call in m.calls])
    dims = run.dims
    docs = declared_docs(catalogue)
    readings = []
    for m in marked:
        example = marker_example(catalogue, numbering, m.snap.number)
        at_hits = _hit_layouts(m, run)  # every hit's value read in the catalogue's layout once: the hit shown's too
        layouts = [_layout_of(m, k, h, run, at_hits) for k, h in enumerate(m.held)]
        tensors = CapturedTensors(m.label, example)
        tensors.extend(_section(m, k, h, found) for k, (h, found) in enumerate(zip(m.held, layouts)))
        layout = layouts[0] if layouts else None  # the first tensor's: what the page says of its shape
        shown = tensors[0].shown.shape if tensors else ()
        # read once with its layouts, before any stage binds the module calls its checks read in that order
        order = catalogue_order(run.as_called(tensors[0].shown.tensor), layout.canonical) \
            if tensors and layout is not None else None
        readings.append(SnapshotReading(
            m.report, m.snap, tensors, m.named_shape, m.named, example, docs[m.snap.number], m.hit_note,
            tuple(layouts), bound_names(m.named_shape, layout, shown, catalogue.dims_legend) if tensors else (),
            m.order, m.hit_values, at_hits, tuple(line.read_in(run) for line in m.lines), m.tensor_lines, run, order))
    return readings, dims, run


def _hit_layouts(marked: _Marked, run: RunLayout) -> tuple[tuple[Layout | None, ...], ...]:
    """Every hit's value of each tensor read in the catalogue's layout, where it is a record's (a tensor the snapshot
    records, not one whose value at the hit shown is past the capture budget)."""
    records = len(marked.snap.tensors)
    return tuple(tuple(catalogue_layout(marked, k, value, run) if value is not None and k < records
                       and not (k < len(marked.held) and marked.held[k].tensor.numel() == 0
                                and marked.held[k].note) else None for value in values)
                 for k, values in enumerate(marked.hit_values))


def _layout_of(marked: _Marked, k: int, held: _Held, run: RunLayout,
               at_hits: tuple[tuple[Layout | None, ...], ...]) -> Layout:
    """How value ``k`` at the hit shown reads in the catalogue's layout: its hit's reading where every hit was read."""
    if held.absent:  # not a shape that fails to match: no tensor at all, said as such
        return Layout(LayoutStatus.ABSENT, None, held.note, None)
    found = at_hits[k][marked.shown_at(k)] if k < len(at_hits) else None
    return found if found is not None else catalogue_layout(marked, k, held.tensor, run)


def _in_catalogue_layout(marked: _Marked, k: int, held: _Held, found: Layout) -> TensorView | NotCheckable:
    """The value in the catalogue's layout, or why it cannot be read so: a value with no tensor says what it is, not a
    shape."""
    if found.canonical is not None:
        return TensorView(held.variable, found.canonical)
    why = held.note if held.absent else (f"your shape {tuple(held.tensor.shape)} cannot be read as it: "
                                         f"{found.note or 'its dimensions are not all bound'}")
    return NotCheckable(f"snapshot {marked.label} in the catalogue's layout ({', '.join(marked.shape_of(k))})", why)


@dataclass(frozen=True)
class Provenance:
    """Where a traced page's tensors come from and how they were read (generator/trace/reading/): everything a page of
    a script's run says that a model run's does not, made here with the page's contents (``traced_contents``). A
    model run's page has none (generator/pages.py ``SnapshotPage.provenance`` None), so a template asks
    ``page.provenance`` once, never which kind of run it is field by field."""

    marker_example: str  # how to mark the snapshot, where the script did not
    doc: str = ""  # what the catalogue's model declares the step's tensor to be
    hit_note: str = ""  # which hit of a line run several times the page shows
    layout: Layout | None = None  # how the first tensor's shape reads as the named one (None: not captured)
    bound: tuple[str, ...] = ()  # named dimensions bound from the script's tensors: "h = 4 (heads)"
    order: int = 0  # the page's place in the order the script ran
    shown_hit: int = 1  # which hit of its (first) marked line the page shows
    hit_values: tuple[tuple[torch.Tensor | None, ...], ...] = ()  # per tensor: its value at every hit
    calls: tuple[ModuleCall, ...] = ()  # the module calls its line(s) made at the shown hit
    derived_from: tuple[str, ...] = ()  # not captured: derived from these for its readers' checks
    not_drawn: tuple[str, ...] = ()  # its figures not drawn: "caption — needs ..."
    data_written: bool = False  # every tensor of the page is in data/
    left_out: int = 0  # values: above it a tensor is left out of data/ (0: none is)



def traced_contents(by_number: Mapping[int, SnapshotReading], judged: Mapping[int, Judgement],
                    drawn: Mapping[int, tuple[dict[str, str], ...]], not_drawn: Mapping[int, tuple[str, ...]],
                    source: TensorDict | None) -> Callable[[Snapshot], PageContents]:
    """What each snapshot's page shows of a traced script (for the one page builder, generator/pages.py
    ``snapshot_pages``): its reading, its checks' results, its figures drawn and not, and where its tensors came from
    (its ``Provenance``), all known before the page is made."""
    def contents(snap: Snapshot) -> PageContents:
        reading, verdicts = by_number[snap.number], judged[snap.number]
        filed = reading.captured and source is not None and snap.tensors and source.has(snap.tensors[0])
        written = [t for t in reading.tensors if 0 < t.shown.numel <= DATA_LIMIT]
        return PageContents(
            tensors=reading.tensors, named_shape=reading.named_shape, expected_shape=(), checks=verdicts.listed,
            verdict=verdicts.verdict, figures=drawn.get(snap.number, ()), captured=reading.captured,
            record=source.name(snap.tensors[0]) if filed and source is not None else "", named=reading.named,
            provenance=Provenance(
                marker_example=reading.marker_example, doc=reading.doc, hit_note=reading.hit_note,
                layout=reading.layout, bound=reading.bound, order=reading.order, shown_hit=reading.shown_hit,
                hit_values=reading.hit_values, calls=reading.calls, derived_from=verdicts.derived_from,
                not_drawn=not_drawn.get(snap.number, ()),
                data_written=reading.captured and len(written) == len(reading.tensors),
                left_out=DATA_LIMIT if any(t.shown.numel > DATA_LIMIT for t in reading.tensors) else 0))

    return contents
