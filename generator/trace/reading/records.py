"""A captured tensor under its record name: which of the catalogue's places (``blocks.{layer}``) a hit of a marked
line fills, the record name and catalogue-layout value of a snapshot's tensor (``filed``), and every hit of every
snapshot filed so (``file_records``: a ``RecordReading`` per record name and hit, and the ``TensorDict`` the checks
read). What the reading (capture_reading.py) files every hit by, and the checks (checking.py) a page's own tensors."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from transformer_trace.sources import TensorDict
from transformer_trace.trace.reading.verify import Layout

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report
    from transformer_trace.trace.reading.capture import ModuleCall
    from transformer_trace.trace.reading.pages import SnapshotReading

# A leading corner of a big tensor (``[:5, :5]``, what a debugger shows of an embedding table): kept under the record
# name, and the checks that read it compare what it covers.
CORNER = re.compile(r"\[\s*:\s*\d+(\s*,\s*:\s*\d+)*\s*\]")


@dataclass(frozen=True)
class TensorLabel:
    """Where a record name's tensor comes from in a trace (or would): ``snapshot`` (its label, "S08"), which of the
    snapshot's several tensors (``variable``), which hit of a line that ran more than once (``at_hit``); or,
    ``sliced``, the whole tensor of which the snapshot's page shows a slice (a trace captures only the slice)."""

    snapshot: str
    variable: str = ""
    at_hit: int | None = None
    sliced: bool = False
    # captured, but not readable in the catalogue's layout: why (dimensions unbound, values not copied)
    unreadable: str = ""
    derived_from: tuple[str, ...] = ()  # not captured: derived from these (generator/trace/reading/derived.py)

    def __str__(self) -> str:
        if self.sliced:
            return f"the whole of what {self.snapshot} shows a slice of"
        if self.derived_from:
            return f"{self.snapshot} (derived from {', '.join(self.derived_from)})"
        return (self.snapshot + (f" ({self.variable})" if self.variable else "")
                + (f" at pass {self.at_hit}" if self.at_hit else ""))

    @property
    def needed(self) -> str:
        """As a not checkable check names it: "snapshot S08", or the whole of a sliced one."""
        if self.unreadable:
            return f"snapshot {self} in the catalogue's layout ({self.unreadable})"
        return str(self) if self.sliced else f"snapshot {self}"


@dataclass(frozen=True)
class RecordReading:
    """One record name at one hit: the captured tensor in the catalogue's layout and where it comes from."""

    name: str  # the catalogue's record name, its placeholders filled for the hit's layer
    hit: int  # which time its marked line ran
    ran: int  # how many times its marked line ran (in the pass read)
    snapshot: str  # the label of the snapshot whose marked line captured it
    tensor: torch.Tensor  # in the catalogue's layout
    layout: Layout | None  # how its shape was read as the catalogue's
    file: str  # the user's file, as the pages name it
    marker_line: int | None  # the line of its breakpoint comment
    cell: str  # in a notebook: "x.ipynb, cell 7, line 3"; empty for a script
    bound: tuple[str, ...]  # the named dimensions its snapshot's tensors bind: "h = 4 (heads)"
    calls: tuple[ModuleCall, ...]  # the module calls its line made at this hit (none past the hit shown: not copied)


def shown_places(page: SnapshotReading, catalogue: Report, pages: list[SnapshotReading],
                 hit: int) -> dict[str, str] | None:
    """The placeholders of the layer a page shows where its line ran fewer times than ``hit`` (it shows its last hit,
    so its checks read that layer's neighbours, not layer ``hit``'s); None where it shows hit ``hit``."""
    ran = len(page.hit_values[0]) if page.hit_values else 0
    return places_at_layer(catalogue, ran, layers_ran(catalogue, pages)) if 0 < ran < hit else None


def layers_ran(catalogue: Report, pages: list[SnapshotReading]) -> dict[str, int]:
    """How many layers the script's loop ran, for each placeholder that names one layer (``RunOptions.NAMED_PASSES``:
    the last, the second)."""
    named = catalogue.options.NAMED_PASSES if catalogue.options is not None else {}
    return {name: _layer_count(pages, template) for name, (_, template) in named.items()}


def _layer_count(pages: list[SnapshotReading], template: str) -> int:
    """How many layers the script ran of the loop whose pages use ``template``'s placeholders (0: none captured).
    The layer's own steps (``{block}.output``, ``{block}.input``: one hit per layer) count first: a step of a module
    inside the layer may run several times a layer (one ``Head`` module per attention head, each running the
    attention's lines), so its hits are no count of layers; only where none of the layer's own steps was captured do
    the others count."""
    names = set(re.findall(r"{(\w+)}", template))
    counts: dict[bool, list[int]] = {True: [], False: []}
    for page in pages:
        if not (page.captured and page.hit_values):
            continue
        for ref in getattr(page.snap, "tensors", ())[:1]:
            if names & set(re.findall(r"{(\w+)}", ref.template)):
                own_step = re.fullmatch(r"\{\w+\}\.\w+", ref.template) is not None
                counts[own_step].append(len(page.hit_values[0]))
    return max(counts[True] or counts[False], default=0)


def options_for(catalogue: Any, layer: int) -> Any:
    """The report's options for layer ``layer`` (hit ``layer`` of a line in the layer loop), or None where they cannot
    describe it (a layer past the model's depth) or the report has none (a script's own points: no model of ours)."""
    from dataclasses import fields

    from transformer_trace.errors import UserError

    if catalogue.options is None:
        return None
    names = {f.name for f in fields(catalogue.options)}
    # only the places are wanted: a depth past the bundled checkpoint's is no error here (seeded weights)
    sizes = {"layers": max(layer, 2), **({"weights": "random"} if "weights" in names else {})} \
        if "layers" in names else {}
    try:
        return catalogue.options(layer=layer, **sizes)
    except (UserError, TypeError, ValueError):
        return None


def places_for(catalogue: Any, layer: int) -> dict[str, str] | None:
    """The catalogue's record-name placeholders for layer ``layer`` (hit ``layer`` of a line in the layer loop), or None
    where the report's options cannot describe it (our own points have no catalogue)."""
    opts = options_for(catalogue, layer)
    return opts.places() if opts is not None else None


def places_at_layer(catalogue: Any, layer: int, layers: dict[str, int]) -> dict[str, str] | None:
    """The catalogue's placeholders for layer ``layer`` of the script's loop, with the ones that name one layer (the
    last, the second) filled from ``layers``, how many layers the script's loop ran (layers_ran); None where the
    report's options cannot describe it."""
    opts = options_for(catalogue, layer)
    if opts is None:
        return None
    places = opts.places()
    for name in opts.NAMED_PASSES:  # the options' own rule, counted in the layers the script's loop ran
        chosen = opts.named_pass(name, layers.get(name, 0))
        if chosen is not None and options_for(catalogue, chosen) is not None:
            places[name] = opts.pass_place(name, chosen)
    return places


def filed(page: SnapshotReading, k: int, tensor: torch.Tensor | None, found: Layout | None,
           places: dict[str, str]) -> tuple[str, torch.Tensor] | None:
    """The record name and catalogue-layout value of the page's ``k``-th tensor (``tensor``, read in the catalogue's
    layout as ``found``, by the reading: reading/pages.py), or None where it is no record's."""
    refs = page.snap.tensors
    if tensor is None or found is None or k >= len(refs) or (k < len(page.tensors) and page.tensors[k].shown.numel == 0
                                                              and page.tensors[k].note):
        return None  # no recorded tensor, or a value past the capture budget (its shape only)
    if len(page.tensors) < len(refs) and getattr(page.tensors[k], "variable", None) not in \
            page.snap.variable.split(", "):
        return None  # one value of a step of several, under a name of its own (a sum marked as its operands): whose?
    index = page.snap.index if k == 0 else None
    if found.canonical is None:
        return None
    if index is None or CORNER.fullmatch(index):
        return refs[k].name(places), found.canonical
    # the page shows the first batch item: the recorded tensor is the batch (its first item with a batch axis)
    if index == "[0]":
        if tensor.dim() != found.canonical.dim() + 1:
            return refs[k].name(places), found.canonical.unsqueeze(0)
        # the whole batch, each item cut as its first was read (a target longer than T: its first T)
        return refs[k].name(places), tensor[(slice(None),) + tuple(slice(0, n) for n in found.canonical.shape)]
    # any other slice (one position's logits) is not the recorded tensor: checks needing it are not checkable
    return None


def unreadable(page: SnapshotReading, k: int, places: dict[str, str]) -> str:
    """Why the page's captured ``k``-th tensor cannot be read in the catalogue's layout ("": it can, or none was)."""
    if (not page.captured or k >= len(page.tensors)
            or filed(page, k, page.tensors[k].shown.tensor, page.layouts[k], places) is not None):
        return ""
    t = page.tensors[k]
    return (t.note if t.shown.numel == 0 and t.note
            else page.layouts[k].note or "its shape cannot be read as the catalogue's")


@dataclass(frozen=True)
class OwnRecords:
    """A captured snapshot's own tensors at the hit its page shows, under that hit's record names (``places``: a line
    that ran fewer times than the hit shown shows its last hit, under that layer's names): what its checks read before
    the run's other tensors, so a snapshot is judged on its own capture, even where an earlier one shows the same
    record point."""

    places: Mapping[str, str]
    tensors: Mapping[str, torch.Tensor]


Filed = tuple[dict[tuple[str, int], RecordReading], dict[str, RecordReading], TensorDict | None, dict[str, TensorLabel],
              dict[int, OwnRecords]]


def file_records(catalogue: Report, snapshots: list[SnapshotReading], hit: int) -> Filed:
    """Every captured tensor under its record name (hit k of a line in the layer loop under layer k's names), in the
    catalogue's layout as the snapshot reading read each hit's value; the hits the pages show; what the checks read
    (``TensorDict``: the hits shown win, else the last hit filed); per record name where it comes from; and each
    captured snapshot's own tensors at the hit its page shows (by snapshot number)."""
    layers = layers_ran(catalogue, snapshots)
    places = places_at_layer(catalogue, hit, layers) or places_at_layer(catalogue, 1, layers)
    if places is None:
        return {}, {}, None, {}, {}
    tensors: dict[str, torch.Tensor] = {}
    labels: dict[str, TensorLabel] = {}  # record name -> the snapshot (and hit) its tensor came from, or would
    records: dict[tuple[str, int], RecordReading] = {}
    for snapshot in snapshots:
        _label(snapshot, places, labels)
        for k, values in enumerate(snapshot.hit_values):
            for h, tensor in enumerate(values, 1):
                found = snapshot.hit_layouts[k][h - 1]
                if (at := places_at_layer(catalogue, h, layers)) is not None and (
                        named := filed(snapshot, k, tensor, found, at)):
                    records[named[0], h] = _record(snapshot, k, named, h, len(values), found,
                                                   snapshot.hit_calls[k][h - 1])
                    tensors[named[0]], labels[named[0]] = named[1], TensorLabel(
                        snapshot.label, at_hit=h if len(values) > 1 else None)
    shown: dict[str, RecordReading] = {}
    owned: dict[int, OwnRecords] = {}
    for snapshot in snapshots:  # a line that ran fewer times than ``hit`` shows its last hit: under that layer's names
        at = shown_places(snapshot, catalogue, snapshots, hit) or places
        own = {named[0]: (k, named) for k, t in enumerate(snapshot.tensors)
               if (named := filed(snapshot, k, t.shown.tensor, snapshot.layouts[k], at))}
        if snapshot.captured:
            owned[snapshot.snap.number] = OwnRecords(at, {name: named[1] for name, (_, named) in own.items()})
        for name, (k, named) in own.items():
            if name not in shown:
                shown[name] = _record(snapshot, k, named, snapshot.shown_hit, len(snapshot.hit_values[k]),
                                      snapshot.layouts[k], snapshot.calls)
                tensors[name], labels[name] = named[1], TensorLabel(snapshot.label)
    return records, shown, TensorDict(tensors, places=places), labels, owned


def _label(snapshot: SnapshotReading, places: dict[str, str], labels: dict[str, TensorLabel]) -> None:
    """Where each record name the snapshot shows would come from, under the shown layer's names, unless known."""
    refs = snapshot.snap.tensors
    variables = snapshot.snap.variable.split(", ") if len(refs) > 1 else []
    for k, ref in enumerate(refs):
        index = snapshot.snap.index
        sliced = k == 0 and index not in (None, "[0]") and not CORNER.fullmatch(index)
        # one of a snapshot's several tensors: the student's name for it where the line captured it
        which = variables[k] if len(variables) == len(refs) else ""
        which = snapshot.tensors[k].variable if which and snapshot.captured and k < len(snapshot.tensors) else which
        labels.setdefault(ref.name(places), TensorLabel(snapshot.label, sliced=True) if sliced
                          else TensorLabel(snapshot.label, which, unreadable=unreadable(snapshot, k, places)))


def _record(snapshot: SnapshotReading, k: int, named: tuple[str, torch.Tensor], hit: int, ran: int,
            found: Layout | None, calls: tuple[ModuleCall, ...]) -> RecordReading:
    section = snapshot.tensors[k]
    return RecordReading(name=named[0], hit=hit, ran=ran, snapshot=snapshot.label, tensor=named[1], layout=found,
                         file=section.source.path, marker_line=section.marker_line, cell=section.source.at,
                         bound=snapshot.bound, calls=calls)
