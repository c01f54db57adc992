"""The pages of a traced script, before they are written: one per snapshot of the chosen catalogue (captured or not),
with the user's tensors at the hit the pages show (and every other hit), their named shapes and layouts, and each
snapshot's verdict from the checks it declares, run on a TensorDict of the captured tensors (checking.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from transformer_trace.catalogue import Question, Report, Stage
from transformer_trace.sources import Lacking, MissingTensor, NotCheckable
from transformer_trace.pages import SnapshotPage, SourceExcerpt, TensorSection
from transformer_trace.render import page_path  # one page layout for every report
from transformer_trace.tensors import TensorView
from transformer_trace.text import fence_title
from transformer_trace.trace.capture import Capture, Hit, Notice, Value
from transformer_trace.trace.markers import Marker
from transformer_trace.trace.checking import places_for, run_checks
from transformer_trace.trace.notebook import cell_of, notebook_name, place
from transformer_trace.trace.verify import Layout, LayoutStatus, bind_dims, catalogue_layout
from transformer_trace.models.legend import Legend


def marker_example(catalogue: Any, numbering: str, number: int) -> str:
    spec = catalogue.trace
    return spec.marker(number, catalogue.label(number)) if spec is not None else "# trace: name"


def own_points(capture: Capture) -> dict[str, int]:
    """`# trace: name` points numbered in the order the script first reached them, then the ones it never reached (in
    the order they are written: a page that says so, not a point that silently vanishes)."""
    first = {}
    for marker, hits in capture.hits.items():
        if marker.point:
            first[marker.point] = min(first.get(marker.point, hits[0].order), hits[0].order)
    never = [m.point for m in sorted(capture.markers, key=lambda m: (m.file, m.line))
             if m.point and m.point not in first]
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
    index: str | None = None
    figures: tuple = ()


@dataclass(frozen=True)
class OwnCatalogue:
    """The script's own `# trace:` points, for `--report none`: one stage, the observed shapes, no checks."""

    snapshots: tuple[OwnPoint, ...]
    key: str = "trace"
    title: str = "Your own trace points"
    short_title: str = "Trace"
    stages: tuple[Stage, ...] = (Stage("points", "Your points", "The values marked with # trace: comments, "
                                       "in the order the script reached them."),)
    dims_legend: Legend = field(default_factory=Legend)
    questions: tuple[Question, ...] = ()
    options: Any = None
    extra_pages: tuple = ()
    figures: tuple = ()
    # What a report declares beyond its catalogue (transformer_trace.catalogue.Report),
    # none of which the script's own points have
    templates: None = None
    trace: None = None
    trace_inputs: Any = field(default_factory=dict)
    exploration: None = None
    whole_values: bool = False

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


class CapturedTensors(list, Lacking):
    """A traced page's captured tensors; one it lacks (the snapshot not captured, or fewer tensors captured than it
    has) is a MissingTensor saying how to capture it, so a report's block that reads it falls back naming that."""

    def __init__(self, label: str, marker_example: str) -> None:
        super().__init__()
        self.label, self.marker_example = label, marker_example

    def lack(self, i: Any) -> MissingTensor:
        if not self:
            return MissingTensor(f"snapshot {self.label}", f"not captured; mark it with {self.marker_example}")
        return MissingTensor(f"tensor {int(i) + 1} of snapshot {self.label}", f"its marker captured {len(self)}")

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, int) and not -len(self) <= i < len(self):
            raise self.lack(i)
        return super().__getitem__(i)


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


def _hit(hits: list[Hit], wanted: int) -> tuple[Hit, str]:
    if wanted <= len(hits):
        return hits[wanted - 1], f"hit {wanted} of {len(hits)}"
    return hits[-1], f"hit {len(hits)} of {len(hits)} (the line ran fewer than the {wanted} times --hit asked for)"


def _tensor_of(value: Value) -> tuple[torch.Tensor | None, str]:
    if value.kind == "dict":
        key, tensor = next(iter(value.tensor.items()))
        return tensor, (f"a dict of {len(value.tensor)} tensors; the page shows its first entry {key!r} "
                        "(all are in data/)")
    if value.tensor is None:
        return None, value.note
    return value.tensor, value.note  # what it was converted from (a NumPy array, a sparse tensor), if anything


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
        lines = f"{len(sites)} line{'s' if len(sites) != 1 else ''}"
        warnings.append(Notice("Not assigned", f"{where} was called from {lines} "
                               f"of your code for {len(marker.alternatives)} snapshots, so its hits were not assigned; "
                               "mark each caller's line instead"))
        return []
    if len(sites) > len(marker.alternatives):
        extra = [f"{Path(site[0]).name}:{site[1]}" for site in list(sites)[len(marker.alternatives):] if site]
        warnings.append(Notice("Hits not shown", f"{where} was also called from {', '.join(extra)}: those hits belong "
                               f"to none of its {len(marker.alternatives)} snapshots and are not shown"))
    return [(replace(marker, number=number, alternatives=()), group)
            for number, group in zip(marker.alternatives, sites.values())]


def named_shapes(catalogue: Any, places: dict[str, str],
                 declared: dict[str, Any]) -> dict[int, tuple[tuple[str, ...] | None, ...]]:
    """Snapshot number -> the named shape of each of its tensors: the catalogue's own (a slice), else the model's
    declared
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


def in_catalogue_order(snap: Any, marked: list[tuple[Marker, list[Hit]]]) -> list[tuple[Marker, list[Hit]]]:
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
    places = [position(marker) for marker, _ in marked]
    if None in places or len(set(places)) != len(places):
        return marked
    return [entry for _, entry in sorted(zip(places, marked), key=lambda pair: pair[0])]


def build_pages(catalogue: Report, numbering: str, capture: Capture,
                hit: int) -> tuple[list[SnapshotPage], dict[str, int], Any, dict]:
    """The pages of a capture, the dimensions bound from it, and its tensors under the catalogue's record names (a
    ``TensorDict``, or None for the script's own points) with the snapshot each name comes from (checking.py)."""
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
        example = marker_example(catalogue, numbering, snap.number)
        page = SnapshotPage(report=catalogue, snap=snap, path=page_path(snap),
                            tensors=CapturedTensors(catalogue.label(snap.number), example),
                            named_shape=shapes[snap.number][0] or (), expected_shape=(), checks=[], origin="captured",
                            captured=snap.number in by_number, marker_example=example, named=shapes[snap.number],
                            doc=_declared_doc(snap, places or {}, declared), data_written=False,
                            questions=[catalogue.question(n) for n in snap.questions])
        notes = []
        for j, (marker, hits) in enumerate(in_catalogue_order(snap, by_number.get(snap.number, []))):
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
            text = capture.sources[marker.file]
            shown, cell = notebook_name(text) or shown, cell_of(text, marker.first)  # a notebook's: cell and line
            at = place(text, shown, marker.first, marker.last) if cell else ""
            source = SourceExcerpt(shown, marker.first, marker.first, [], marker.last, _code_block(
                text, marker.first, marker.last, at or shown, cell[2:] if cell else None), at)
            for value in chosen.values:
                tensor, note_text = _tensor_of(value)
                absent = tensor is None
                if absent:
                    tensor, note_text = torch.zeros(0), f"`{value.name}` is {note_text}"
                view = TensorView(f"{snap.number:02d}_{value.name}", tensor)
                index, slice_text = view.slice_text()
                page.tensors.append(TensorSection(name=view.name, shown=view, index=None, device=value.device,
                                                  source=source,
                                                  slice_index=index, slice_text=slice_text, variable=value.name,
                                                  marker_line=marker.line, note=note_text,
                                                  marked_at=place(text, shown, marker.line), absent=absent))
        page.captured = bool(page.tensors)
        page.hit_note = "; ".join(dict.fromkeys(notes))
        pages.append(page)
    dims = bind_dims([(p.shape_of(i), t.shown.shape) for p in pages if p.captured for i, t in enumerate(p.tensors)],
                     catalogue.dims_legend)
    for page in pages:
        for k, t in enumerate(page.tensors):
            if t.absent:  # not a shape that fails to match: no tensor at all, said as such
                found = Layout(LayoutStatus.ABSENT, None, t.note, None)
            else:
                found = catalogue_layout(page, k, t.shown.tensor, dims)
            page.layout = page.layout or found  # the first tensor's: what the page says of its shape
            t.catalogue = TensorView(t.variable, found.canonical) if found.canonical is not None else NotCheckable(
                f"snapshot {page.label} in the catalogue's layout ({', '.join(page.shape_of(k))})",
                f"your shape {tuple(t.shown.shape)} cannot be read as it: "
                f"{found.note or 'its dimensions are not all bound'}")
    for page in pages:
        page.bound = bound_names(page, catalogue.dims_legend) if page.captured else []
    source, labels = run_checks(pages, catalogue, dims, shown_pass(pages))  # the catalogue's checks, on the capture
    for before, after in zip(pages, pages[1:]):
        before.next, after.prev = after, before
    return pages, dims, source, labels


def bound_names(page: SnapshotPage, legend: dict[str, str]) -> list[str]:
    """The page's named dimensions bound from the user's tensors: "h = 4 (attention heads)"."""
    sizes = page.layout.expected if page.layout is not None and page.layout.expected else page.main.shown.shape
    named = []
    for expression, size in zip(page.shape, sizes):
        if expression.isdigit():  # a literal size (the mask's broadcast axes) names nothing
            continue
        text = f"{expression} = {size}" + (f" ({legend[expression]})" if legend.get(expression) else "")
        if text not in named:
            named.append(text)
    return named


def shown_pass(pages: list[SnapshotPage]) -> int:
    """The pass of the script's loop the pages show: --hit, or the last pass where the loop ran fewer times."""
    return max((page.shown_hit for page in pages if page.captured), default=1)
