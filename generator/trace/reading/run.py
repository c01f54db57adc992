"""The trace's boundary: a capture becomes the run object the bundled reports produce (``traced_run``: a
``TracedRun``, a ``transformer_trace.run.ModelRun`` of the captured tensors under the catalogue's record names, no
model, the modules its marked lines called rebuilt from their own parameters, and what it lacks, typed), so the checks,
pages, figures and data read a trace as they read a bundled report. It is built from the reading, before any check
runs: the checks run on it (trace/reading/checking.py ``judge``), each through the view of the pass its page shows.

``TraceReport`` is what a script's run adds to its overview: the counts, the first failure in pipeline order, the
script's error or timeout, the figures drawn from the user's tensors; ``trace_overview`` the overview's data from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from transformer_trace.pages import Alert, Column, Dimensions, Overview, SnapshotPage, TensorSection
from transformer_trace.render import literal_block
from transformer_trace.run import Lacks, ModelRun
from transformer_trace.sources import Float64Copies, Known, MissingTensor, ModuleRef, NoWeights, ParamRef, TensorDict
from transformer_trace.text import escape_text
from transformer_trace.trace.reading.checking import TensorLabel
from transformer_trace.trace.reading.head_modules import heads_joined
from transformer_trace.trace.reading.weights import CalledModules, modules_called
from transformer_trace.models.recording import Recorded, Recording

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report
    from transformer_trace.trace.reading.capture_reading import CaptureReading
    from transformer_trace.trace.reading.pages import SnapshotReading


def trace_inputs(catalogue: Report) -> Mapping[str, tuple[str, Any]]:
    """The run inputs a report lets a trace stand in for with labels read from the user's own tensors
    (its TraceSpec's inputs, declared in generator/reports/<report>/trace.py): input -> ("ids" | "values",
    snapshot number): "ID n" (or n) for each ID the snapshot captured; or ("vocabulary" | "classes", dimension): "ID k"
    / "class k" for k below the bound dimension. So the report's blocks still read "position 0 (“ID 3”)". Empty for a
    report without one."""
    return catalogue.trace_inputs


def id_labels(catalogue: Report, by_number: Mapping[int, SnapshotReading],
              dims: Mapping[str, int]) -> dict[str, list[str] | list[int]]:
    """The inputs of trace_inputs() this trace can offer: those whose snapshot was captured, or whose dimension was
    bound."""
    found: dict[str, list[str] | list[int]] = {}
    for key, (kind, where) in trace_inputs(catalogue).items():
        if kind in ("ids", "values"):
            page = by_number.get(where)
            shown = page.main.shown if page is not None and page.captured else None
            if shown is not None and not shown.tensor.is_floating_point() and shown.numel:
                ids = [int(v) for v in shown.tensor.flatten().tolist()]
                found[key] = [f"ID {i}" for i in ids] if kind == "ids" else ids
        elif where in dims:
            found[key] = [f"{'class' if kind == 'classes' else 'ID'} {k}" for k in range(dims[where])]
    return found


INPUTS_WHY = ("a trace captures your tensors, not the facts of your run's input "
              "(its sentences, words, image, vocabulary)")
NO_WEIGHTS = "a trace captures tensors, not the model's weights"


def absent_tensors(source: TensorDict, labels: dict[str, TensorLabel], captured: set[str],
                   markers: dict[str, str]) -> dict[str, MissingTensor]:
    """Why each record name a catalogue snapshot shows (or would) is not in the trace: a slice captured instead, a
    shape not readable as the catalogue's, or a snapshot not marked (naming its marker)."""
    absent = {}
    for name, label in labels.items():
        if source.has(name):
            continue
        if label.sliced:
            absent[name] = MissingTensor(str(label), "a page shows a slice of it, so a trace captures only that slice")
        elif label.snapshot in captured:
            absent[name] = MissingTensor(f"snapshot {label} in the catalogue's layout",
                                         "its shape cannot be read as the catalogue's")
        else:
            marker = markers.get(label.snapshot, "its marker")
            absent[name] = MissingTensor(f"snapshot {label}", f"not captured; mark it with {marker}")
    return absent


@dataclass
class TracedRun(ModelRun):
    """A traced script's run: no model, and the modules its marked lines called, rebuilt from the calls' own parameters
    by catalogue name (``called``, trace/reading/weights.py ``modules_called``), answer ``module()`` and
    ``parameter()`` as a model run's model does; ``catalogued``, the captured tensors under the catalogue's record
    names (the recording's, as one source; None where the report's options cannot name a pass of the script's loops)."""

    called: CalledModules = field(default_factory=dict)
    catalogued: TensorDict | None = None
    # record name -> its snapshot's place in the order the script ran (its page's first hit)
    ran: Mapping[str, int] = field(default_factory=dict)

    def ran_after(self, name: str, other: str) -> bool:
        """Whether record ``name`` was computed after record ``other`` in this run, where the pages' order tells it:
        both outside a loop or at its first pass (a page's place is its first hit's; a later pass's is not known)."""
        first = all(part == "0" or not part.isdigit() for part in f"{name}.{other}".split("."))
        return first and name in self.ran and other in self.ran and self.ran[name] > self.ran[other]

    def module(self, template: ModuleRef | str) -> Any:
        name = self.name(template)
        if name in self.called:
            return self.called[name]
        return super().module(template)

    def parameter(self, template: ParamRef | str) -> torch.Tensor:
        """A parameter of a module a marked line called (``tok_emb.weight``: the Embedding's own weight)."""
        name = self.name(template)
        owner, _, attribute = name.rpartition(".")
        value = getattr(self.called.get(owner), attribute, None)
        if not isinstance(value, torch.Tensor):
            raise NoWeights(f"parameter {name}", self.lacks.weights)
        return self.float64.of(value)

    def seen_from(self, tensors: Mapping[str, torch.Tensor], places: Mapping[str, str]) -> TensorDict:
        """The run as one marked line's checks read it: ``tensors`` (the run's, the steps nobody marked derived from
        them, the page's own pass), record names filled at the pass the page shows (``places``), the modules and
        parameters the run's calls rebuilt."""
        return TensorDict(tensors, places=places, inputs=self.inputs, run=self, float64=self.float64)


def traced_run(reading: CaptureReading, inputs: dict[str, Any], stamp: dict[str, Any], command: str) -> TracedRun:
    """The capture as the run object the bundled reports produce (generator/run.py ``ModelRun``), built before any
    check runs: the captured tensors under the catalogue's record names and in its layouts (``source``,
    trace/reading/checking.py), each with the user's file and marked line; no model, but the modules the marked lines
    called, rebuilt from the calls' own parameters (trace/reading/weights.py ``modules_called``); and what the run
    lacks, typed: the weights no call gave (``NoWeights``), the input's facts (``NoInput``), the tensors of snapshots
    not marked or not readable (``MissingTensor``, saying which and why)."""
    catalogue, source, labels, pages = reading.catalogue, reading.source, dict(reading.labels), reading.snapshots
    captured = {p.label for p in pages if p.captured}
    recording = Recording()
    for name, tensor in (source.tensors.items() if source is not None else ()):
        page = reading.by_label[labels[name].snapshot]
        shown = next((t for t in page.tensors if t.variable == labels[name].variable), page.main)
        recording[name] = Recorded(name=name, tensor=tensor, file=Path(shown.source.path), line=_marked_line(shown))
    named = [(source.name(ref), t) for page in pages for ref, t in zip(page.snap.tensors, page.tensors)
             ] if source is not None else []
    for name, t in named:  # the shown hit's own tensors: their own marked lines
        if name in recording:
            recording[name] = Recorded(name=name, tensor=recording[name].tensor, file=Path(t.source.path),
                                       line=_marked_line(t))
    markers = {p.label: p.marker_example for p in pages}
    absent = absent_tensors(source, labels, captured, markers) if source is not None else {}
    return TracedRun(
        report=catalogue, model=None, recording=recording, inputs=Known(inputs, "input", INPUTS_WHY),
        dims=Known(model_dims(reading.dims, reading.snapshots), "dimension", "not bound from your tensors"),
        places=dict(source.places) if source is not None else {},
        seed=stamp.get("seed"), device=", ".join(stamp["devices"]), weights="the script's own",
        lacks=Lacks(weights=NO_WEIGHTS, inputs=INPUTS_WHY, tensors=absent,
                    unrecorded="no snapshot of the catalogue shows it, so a trace cannot capture it"),
        facts=Known(stamp, "run fact", "a traced script's run stamp does not record it"),
        # No declared points: the figures' axes take the exploration's words only where a run declares its points, and
        # a trace knows no words (its pages and explorer read the catalogue's named shapes from the pages instead).
        record_points={}, command=command, catalogued=source,
        float64=source.float64 if source is not None else Float64Copies(),  # one float64 copy per tensor: its views'
        called=modules_called(list(pages), source) if source is not None else {},
        ran={name: reading.by_label[label.snapshot].order for name, label in labels.items()
             if label.snapshot in reading.by_label and reading.by_label[label.snapshot].captured},
    )


def model_dims(dims: Mapping[str, int], pages: Sequence[SnapshotReading]) -> dict[str, int]:
    """The named dimensions as the model has them, for what the pages say: as the checks read them (``dims``), but
    where the run is of one module per head (h = 1 read, no tensor has a heads axis) h and hs are the heads its
    concatenation joins (head_modules.py ``heads_joined``), so that an explanation counts the model's heads."""
    model = dict(dims)
    if model.get("h") == 1 and model.get("C") and (heads := heads_joined(pages)) and model["C"] % heads == 0:
        model.update(h=heads, hs=model["C"] // heads)
    return model


def _marked_line(t: TensorSection) -> int:
    """The line of the breakpoint comment that captured a traced tensor (each has one)."""
    assert t.marker_line is not None, f"{t.name}: a traced tensor without its marked line"
    return t.marker_line


@dataclass
class TraceReport:
    """What a script's run adds to its overview (its texts' ``outcome``): the counts, the first failure in pipeline
    order, the script's error or timeout, the figures drawn from the user's tensors."""

    counts: dict[str, int]
    outcome: dict[str, Any]  # error, timed_out, timeout, finished, warnings (snapshots.json's outcome)
    first_failure: SnapshotPage | None  # the page that failed first in the model's data flow
    drawn: dict[str, str] = field(default_factory=dict)  # figure id -> caption, drawn from the user's tensors

    @property
    def checks_fact(self) -> tuple[str, str]:
        """The facts table's row of the checks (the run's own rows are its inputs' ``facts``, known before any check
        ran): what the print view's table and snapshots.json's ``facts`` add to the run's."""
        counts = self.counts
        return ("Checks", f"{counts['passed']} passed, {counts['failed']} failed, {counts['unrecognised']} "
                          f"unrecognised, {counts['unchecked']} not checkable")


TRACE_COLUMNS = (Column("#", "link"), Column("Title", "title"), Column("Your variable", "variable"),
                 Column("Shape", "shape"), Column("Check", "check"))


def trace_overview(report: Report, trace: TraceReport, dims: Mapping[str, int | str]) -> Overview:
    """What a traced script's overview shows beyond its pages: what stopped the script, the hits not assigned, the
    dimensions bound from the user's tensors, the overview figures drawn from them."""
    outcome, alerts = trace.outcome, []
    if outcome["error"]:
        alerts.append(Alert("failure", "The script stopped with an error",
                            (escape_text(outcome["error"]),
                             *([literal_block(outcome["traceback"])] if outcome.get("traceback") else []),
                             "The pages show what was captured before it.")))
    elif outcome["timed_out"]:
        alerts.append(Alert("failure", f"Stopped after {outcome['timeout']} s (--timeout)",
                            ("The pages show what was captured up to then.",)))
    alerts += [Alert("warning", escape_text(getattr(warning, "heading", "Warning")), (escape_text(warning),))
               for warning in outcome["warnings"]]
    dimensions = Dimensions("Named dimensions, bound from your tensors", "", "Your run",
                            tuple((name, meaning, dims.get(name, "not bound"))
                                  for name, meaning in report.dims_legend.items())) if report.dims_legend else None
    return Overview(texts="_overview_trace.md.j2", columns=TRACE_COLUMNS, alerts=tuple(alerts), dimensions=dimensions,
                    glance=tuple({"file": f"figures/{fid}.png", "caption": trace.drawn[fid]}
                                 for fid in report.overview_figures if fid in trace.drawn), outcome=trace)
