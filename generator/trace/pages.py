"""The pages of a traced script, before they are written: one per snapshot of the chosen catalogue (captured or not),
with the user's tensors at the hit the pages show (and every other hit), their named shapes and layouts, and each
snapshot's verdict from the checks it declares, run on a TensorDict of the captured tensors (checking.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from generator.catalogue import Question, Report, Snapshot, Stage
from generator.checks import NOT_CHECKABLE, CheckResult
from generator.render import page_path  # one page layout for every report
from generator.tensors import TensorView
from generator.text import fence_title
from generator.trace.capture import Capture, Hit, Value
from generator.trace.markers import Marker
from generator.trace.checking import run_checks
from generator.trace.verify import Layout, LayoutStatus, bind_dims, layout


def _spec(numbering: str) -> Any:
    from generator.trace import specs

    return specs().get(numbering)


def marker_example(catalogue: Any, numbering: str, number: int) -> str:
    spec = _spec(numbering)
    return spec.marker(number, catalogue.label(number)) if spec is not None else "# trace: name"


def own_points(capture: Capture) -> dict[str, int]:
    """`# trace: name` points numbered in the order the script first reached them, then the ones it never reached (in
    the order they are written: a page that says so, not a point that silently vanishes)."""
    first = {}
    for marker, hits in capture.hits.items():
        if marker.point:
            first[marker.point] = min(first.get(marker.point, hits[0].order), hits[0].order)
    never = [m.point for m in sorted(capture.markers, key=lambda m: (m.file, m.line)) if m.point and m.point not in first]
    return {point: i for i, point in enumerate([*sorted(first, key=first.get), *dict.fromkeys(never)], 1)}


@dataclass(frozen=True)
class OwnPoint:
    """A `# trace:` point as a page: what the templates read of a catalogue snapshot (no record point, no check)."""

    number: int
    title: str
    variable: str
    shape: tuple[str, ...]
    stage: str = "points"
    questions: tuple[int, ...] = ()
    differs: str = ""
    tensors: tuple = ()


@dataclass(frozen=True)
class OwnCatalogue:
    """The script's own `# trace:` points, for `--report none`: one stage, the observed shapes, no checks."""

    snapshots: tuple[OwnPoint, ...]
    key: str = "trace"
    title: str = "Your own trace points"
    short_title: str = "Trace"
    stages: tuple[Stage, ...] = (Stage("points", "Your points", "The values marked with # trace: comments, in the order the script reached them."),)
    dims_legend: Any = field(default_factory=dict)
    questions: tuple[Question, ...] = ()
    options: Any = None
    extra_pages: tuple = ()
    figures: tuple = ()

    def label(self, number: int) -> str:
        return f"T{number:02d}"

    def question(self, number: int) -> Question:
        raise KeyError(number)


def own_catalogue(capture: Capture) -> OwnCatalogue:
    points = own_points(capture)
    shapes = {}
    for marker, hits in capture.hits.items():
        if marker.point and marker.point not in shapes:
            tensor, _ = _tensor_of(hits[0].values[0])
            shapes[marker.point] = tuple(str(n) for n in (tensor.shape if tensor is not None else ()))
    return OwnCatalogue(tuple(OwnPoint(n, point, point, shapes.get(point, ())) for point, n in points.items()))


@dataclass
class Source:
    path: str
    first: int
    last: int
    block: str  # fenced, highlighted Markdown code block


@dataclass
class TracedTensor:
    name: str  # record name in data/ (unique per report)
    variable: str  # the user's name
    view: TensorView
    device: str
    source: Source
    marker_line: int
    slice_index: str
    slice_text: str
    note: str = ""
    absent: bool = False  # the value is not a tensor a page can show (``note`` says what it is): no shape, no dtype


@dataclass
class TracedPage:
    snap: Snapshot
    label: str
    path: str
    captured: bool
    marker_example: str
    tensors: list[TracedTensor] = field(default_factory=list)
    layout: Layout | None = None
    check: CheckResult = field(default_factory=lambda: CheckResult("", False, "", status=NOT_CHECKABLE))  # the combined verdict (checking.run_checks)
    checks: list[CheckResult] = field(default_factory=list)  # one per check the snapshot declares (checking.run_checks)
    not_drawn: list[str] = field(default_factory=list)  # the snapshot's figures a trace could not draw: "caption — needs ..."
    order: int = 0  # capture order of the shown hit: the pipeline order of the user's run
    named: tuple[tuple[str, ...] | None, ...] = ()  # the named shape of each of the snapshot's tensors (catalogue or declaration)
    shown_hit: int = 1  # which hit of its (first) marker the page shows
    hit_values: list[list[torch.Tensor | None]] = field(default_factory=list)  # per tensor of the page: its value at every hit
    hit_note: str = ""
    doc: str = ""  # what the catalogue's model declares the step's tensor to be
    explanation: str = ""
    questions: list[Question] = field(default_factory=list)
    data_written: bool = False
    figures: list[dict[str, str]] = field(default_factory=list)
    report: Any = field(default_factory=lambda: SimpleNamespace(exploration=None))
    prev: TracedPage | None = None
    next: TracedPage | None = None

    @property
    def main(self) -> TracedTensor:
        return self.tensors[0]

    @property
    def shape(self) -> tuple[str, ...]:
        """The named shape the page expects of its first tensor."""
        return self.named[0] if self.named and self.named[0] else ()

    def shape_of(self, i: int) -> tuple[str, ...]:
        return self.named[i] if i < len(self.named) and self.named[i] else self.shape

    @property
    def variables(self) -> str:
        return ", ".join(t.variable for t in self.tensors)

    @property
    def named_shape(self) -> tuple[str, ...]:
        return self.shape

    def link_from(self, other_path: str) -> str:
        return "../" * other_path.count("/") + self.path


def _code_block(source: str, first: int, last: int, shown: str) -> str:
    lines = source.splitlines()
    start, stop = max(1, first - 6), min(len(lines), last + 3)
    while start < first and not lines[start - 1].strip():
        start += 1
    while stop > last and not lines[stop - 1].strip():
        stop -= 1
    text = "\n".join(lines[start - 1:stop])
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", text)), default=0))
    highlight = f"{first - start + 1}" + (f"-{last - start + 1}" if last > first else "")
    title = fence_title(shown)
    return f'{fence}python linenums="{start}" hl_lines="{highlight}" title="{title}"\n{text}\n{fence}'


def _hit(hits: list[Hit], wanted: int) -> tuple[Hit, str]:
    if wanted <= len(hits):
        return hits[wanted - 1], f"hit {wanted} of {len(hits)}"
    return hits[-1], f"hit {len(hits)} of {len(hits)} (the line ran fewer than the {wanted} times --hit asked for)"


def _tensor_of(value: Value) -> tuple[torch.Tensor | None, str]:
    if value.kind == "dict":
        key, tensor = next(iter(value.tensor.items()))
        return tensor, f"a dict of {len(value.tensor)} tensors; the page shows its first entry {key!r} (all are in data/)"
    if value.tensor is None:
        return None, value.note
    return value.tensor, value.note  # what it was converted from (a NumPy array, a sparse tensor), if anything


def places_for(catalogue: Any, layer: int) -> dict[str, str] | None:
    """The catalogue's record-name placeholders for layer ``layer`` (a loop's pass ``layer``), or None where the report's
    options cannot describe it (our own points have no catalogue)."""
    from dataclasses import fields

    from generator.errors import UserError

    if catalogue.options is None:
        return None
    names = {f.name for f in fields(catalogue.options)}
    try:
        return catalogue.options(layer=layer, **({"layers": max(layer, 2)} if "layers" in names else {})).places()
    except (UserError, TypeError, ValueError):
        return None


def by_caller(marker: Marker, hits: list[Hit], warnings: list[str]) -> list[tuple[Marker, list[Hit]]]:
    """A line shared by several snapshots ("#7 or #21 or #30"): its hits split by the user's line that called it, the
    callers in the order they first called, one snapshot each. Callers beyond the listed snapshots are left out (the
    seed's "#12 or #27" names the encoder's and the masked attention's heads, not the cross-attention's); with fewer
    callers than snapshots none is assigned. The overview says which."""
    from dataclasses import replace

    sites: dict[Any, list[Hit]] = {}
    for hit in hits:
        sites.setdefault(hit.site, []).append(hit)
    where = f"{Path(marker.file).name}:{marker.line}: {marker.text!r}"
    if len(sites) < len(marker.alternatives):
        warnings.append(f"{where} was called from {len(sites)} line{'s' if len(sites) != 1 else ''} of your code for "
                        f"{len(marker.alternatives)} snapshots, so its hits were not assigned; mark each caller's line instead")
        return []
    if len(sites) > len(marker.alternatives):
        extra = [f"{Path(site[0]).name}:{site[1]}" for site in list(sites)[len(marker.alternatives):] if site]
        warnings.append(f"{where} was also called from {', '.join(extra)}: those hits belong to none of its "
                        f"{len(marker.alternatives)} snapshots and are not shown")
    return [(replace(marker, number=number, alternatives=()), group) for number, group in zip(marker.alternatives, sites.values())]


def named_shapes(catalogue: Any, places: dict[str, str], declared: dict[str, Any]) -> dict[int, tuple[tuple[str, ...] | None, ...]]:
    """Snapshot number -> the named shape of each of its tensors: the catalogue's own (a slice), else the model's declared
    record point (issue 19: shapes are declared once, in the model file)."""
    shapes = {}
    for snap in catalogue.snapshots:
        tensors = getattr(snap, "tensors", ())
        found = []
        for k, ref in enumerate(tensors or (None,)):
            if k == 0 and getattr(snap, "shape", None):
                found.append(tuple(snap.shape))
            elif ref is not None and (entry := declared.get(ref.name(places))) is not None:
                found.append(tuple(entry.shape))
            else:
                found.append(None)
        shapes[snap.number] = tuple(found)
    return shapes


def _declared_doc(snap: Any, places: dict[str, str], declared: dict[str, Any]) -> str:
    """What the catalogue's model declares its first tensor to be (models/*.py ``Point.doc``), for the explanation."""
    refs = getattr(snap, "tensors", ())
    entry = declared.get(refs[0].name(places)) if refs else None
    return getattr(getattr(entry, "point", None), "doc", "") or ""


def build_pages(catalogue: Report, numbering: str, capture: Capture, hit: int) -> tuple[list[TracedPage], dict[str, int]]:
    folder = capture.script.parent
    places = places_for(catalogue, 1)
    declared = catalogue.options().record_points() if places is not None else {}
    shapes = named_shapes(catalogue, places or {}, declared)
    by_number: dict[int, list[tuple[Marker, list[Hit]]]] = {}
    points = own_points(capture) if numbering == "none" else {}
    for marker in sorted(capture.markers, key=lambda m: (m.file, m.line)):
        if marker in capture.hits and numbering == "none" and marker.point:
            by_number.setdefault(points[marker.point], []).append((marker, capture.hits[marker]))
        elif marker in capture.hits and marker.numbering == numbering and marker.alternatives:
            for alternative, hits in by_caller(marker, capture.hits[marker], capture.warnings):
                by_number.setdefault(alternative.number, []).append((alternative, hits))
        elif marker in capture.hits and marker.numbering == numbering:
            by_number.setdefault(marker.number, []).append((marker, capture.hits[marker]))
    pages = []
    for snap in catalogue.snapshots:
        page = TracedPage(snap=snap, label=catalogue.label(snap.number), path=page_path(snap), captured=snap.number in by_number,
                          marker_example=marker_example(catalogue, numbering, snap.number), named=shapes[snap.number],
                          doc=_declared_doc(snap, places or {}, declared),
                          questions=[catalogue.question(n) for n in snap.questions])
        notes = []
        for j, (marker, hits) in enumerate(by_number.get(snap.number, [])):
            chosen, note = _hit(hits, hit)
            notes.append(note)
            if j == 0:
                page.shown_hit = min(hit, len(hits))
            for k in range(len(chosen.values)):
                page.hit_values.append([_tensor_of(h.values[k])[0] if k < len(h.values) else None for h in hits])
            page.order = min(page.order or chosen.order, chosen.order)
            try:
                shown = str(Path(marker.file).relative_to(folder))
            except ValueError:
                shown = Path(marker.file).name
            source = Source(shown, marker.first, marker.last, _code_block(capture.sources[marker.file], marker.first, marker.last, shown))
            for value in chosen.values:
                tensor, note_text = _tensor_of(value)
                absent = tensor is None
                if absent:
                    tensor, note_text = torch.zeros(0), f"`{value.name}` is {note_text}"
                view = TensorView(f"{snap.number:02d}_{value.name}", tensor)
                index, text = view.slice_text()
                page.tensors.append(TracedTensor(view.name, value.name, view, value.device, source, marker.line, index,
                                                 text, note_text, absent))
        page.captured = bool(page.tensors)
        page.hit_note = "; ".join(dict.fromkeys(notes))
        pages.append(page)
    dims = bind_dims([(p.shape_of(i), t.view.shape) for p in pages if p.captured for i, t in enumerate(p.tensors)],
                     catalogue.dims_legend)
    for page in pages:
        if page.captured and page.main.absent:  # not a shape that fails to match: no tensor at all, said as such
            page.layout = Layout(LayoutStatus.ABSENT, None, page.main.note, None)
        elif page.captured:
            page.layout = layout(page.main.view.tensor, page.shape, dims, catalogue.dims_legend, first_item=getattr(page.snap, "index", None) == "[0]")
    run_checks(pages, catalogue, dims, shown_pass(pages))  # generator/trace/checking.py: the catalogue's typed checks on the captured tensors
    for before, after in zip(pages, pages[1:]):
        before.next, after.prev = after, before
    return pages, dims


def shown_pass(pages: list[TracedPage]) -> int:
    """The pass of the script's loop the pages show: --hit, or the last pass where the loop ran fewer times."""
    return max((page.shown_hit for page in pages if page.captured), default=1)
