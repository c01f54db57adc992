"""A capture read once (``read``) into a frozen ``CaptureReading``: every snapshot of the catalogue as the capture shows
it (pages.py ``SnapshotReading``), every captured tensor under its record name at each hit, in the catalogue's layout,
with where it comes from (``RecordReading``: file, marker line, notebook cell, hit, the layout read, the dimensions
bound, the module calls its line made), and what the run lacks (its notices: markers never reached, passes left out,
hits not assigned). The checks (checking.py), the run (run.py), the data, the figures and the pages take what they need
from it; nothing after it reads the capture.

One word per idea, in this room and the command:

- **hit**: which time a marked line ran, counted from 1 (the CLI's ``--hit`` chooses the one the pages show; a marked
  ``for`` line hits once per iteration). A line in the layer loop runs once per layer, so its hit k is layer k's step;
  a step outside the loop shows its first hit.
- **layer**: which block of the stack a record name's placeholder names (``blocks.{layer}``); hit k of a line in the
  layer loop is filed under layer k's record names.
- **pass**: which forward pass of the model (a script that runs it twice: an inference, then a training step); the
  reading keeps the first (forward_passes.py).
- **order**: a hit's place in the capture's event sequence, the order the script ran its marked lines in.

Two older uses of "pass" for a layer stay outside this room's identifiers: a check's text "read: G05 at pass 2"
(``TensorLabel.at_hit``, kept so the pages read as before) and the run options' ``NAMED_PASSES`` (placeholders that name
one layer, the last or the second: generator/options.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import torch

from transformer_trace.sources import TensorDict
from transformer_trace.trace.markers import Marker
from transformer_trace.trace.notebook import notebook_name, translate_error
from transformer_trace.trace.reading.capture import Capture, Hit, Notice
from transformer_trace.trace.reading.eval_dropout import modules_training
from transformer_trace.trace.reading.forward_passes import first_forward_pass, without_dry_runs
from transformer_trace.trace.reading.pages import (DATA_LIMIT, SnapshotReading, marked_snapshots,
                                                   read_snapshots)
from transformer_trace.trace.reading.records import OwnRecords, RecordReading, TensorLabel, file_records
from transformer_trace.trace.reading.stem_hits import without_stem_hits

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report


@dataclass(frozen=True)
class CaptureReading:
    """A script's capture, read once: its snapshots, its tensors by (record name, hit), what it lacks, and the run's
    facts the report states (script, seeds, error)."""

    catalogue: Report
    numbering: str
    hit: int  # the hit the pages show of the lines in the layer loop: --hit, or the last where they ran fewer times
    dims: Mapping[str, int]  # the named dimensions the captured tensors bind
    snapshots: tuple[SnapshotReading, ...]  # in the catalogue's order, captured or not
    by_number: Mapping[int, SnapshotReading]  # each of them by its snapshot's number: the one lookup every stage reads
    by_label: Mapping[str, SnapshotReading]  # ... and by its label ("S08")
    records: Mapping[tuple[str, int], RecordReading]  # every hit of every record name, each once
    shown: Mapping[str, RecordReading]  # the hits the pages show, by record name (its first snapshot owns it)
    source: TensorDict | None  # what the checks read: per record name the hit shown, else its last hit filed
    labels: Mapping[str, TensorLabel]  # per record name a snapshot shows (or would): where it comes from
    own: Mapping[int, OwnRecords]  # per captured snapshot (by number): its own tensors at the hit its page shows
    data: Mapping[str, torch.Tensor]  # what data/ ships: the pages' tensors, and every hit's (hit<i>_..., hits_...)
    notices: tuple[str, ...]  # what the run lacks and the report could not use, for the overview (Notices)
    told_apart: tuple[str, ...]  # how each shared line's hits were assigned (shared_lines.by_caller)
    # the run's one layout as the overview says it, (what, variant, rests on) rows (run_layout.py ``RunLayout``)
    layout_read: tuple[tuple[str, str, str], ...]
    passes: int  # how many forward passes ran (the first is read)
    script: Path
    sha256: str
    seeds: tuple[int, ...]
    seconds: float
    error: str | None
    error_traceback: str
    error_at: Mapping[str, str | int] | None  # where the student's code raised it (``error_place``)
    timed_out: bool
    markers: tuple[Marker, ...]
    sources: Mapping[str, str]  # each marked file as it was when the run began
    # per snapshot number: why the cross-attention whose hits it shows was fed the wrong input (shared_lines.Told)
    misfed: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))
    # the mode of the modules that ran the marked lines of the pass read: True where one was in training mode, False
    # where all were in eval mode, None where no marked line ran in a module's method (eval_dropout.py)
    modules_training: bool | None = None

    @property
    def finished(self) -> bool:
        return self.error is None and not self.timed_out


def read(catalogue: Report, numbering: str, capture: Capture, hit: int) -> CaptureReading:
    """The one reading of ``capture`` for ``catalogue`` (numbered ``numbering``), the pages showing hit ``hit`` of the
    lines in the layer loop: the capture itself is left as the run wrote it."""
    captured, dry_run = without_dry_runs(capture.hits, catalogue, numbering)  # a model's run while it was built
    captured, passes, several = first_forward_pass(captured, catalogue, numbering)  # the checks read one pass
    captured, stem = without_stem_hits(captured, catalogue, numbering)  # the layers' code run before the layers
    notices: list[str] = [*capture.warnings, *(n for n in (dry_run, several, stem) if n is not None)]
    told_apart, misfed = list(capture.told_apart), dict[int, str]()
    marked = marked_snapshots(catalogue, capture.markers, captured, numbering, notices, told_apart, misfed)
    notices, told_apart = _at_notebook_places(notices, capture), _at_notebook_places(told_apart, capture)
    snapshots, dims, layout = read_snapshots(catalogue, numbering, capture, hit, marked)
    if layout.contradiction:  # steps that read only in different layouts: the overview says so, once
        notices.append(Notice("Layout", layout.contradiction))
    shown_hit = max((snapshot.shown_hit for snapshot in snapshots if snapshot.captured), default=1)
    records, shown, source, labels, own = file_records(catalogue, snapshots, shown_hit)
    data: dict[str, torch.Tensor] = {}
    for snapshot in snapshots:
        data |= {t.name: t.shown.tensor for t in snapshot.tensors if 0 < t.shown.numel <= DATA_LIMIT}
    return CaptureReading(
        catalogue=catalogue, numbering=numbering, hit=shown_hit, dims=MappingProxyType(dims),
        snapshots=tuple(snapshots), by_number=MappingProxyType({s.snap.number: s for s in snapshots}),
        by_label=MappingProxyType({s.label: s for s in snapshots}), records=MappingProxyType(records),
        shown=MappingProxyType(shown), source=source, labels=MappingProxyType(labels), own=MappingProxyType(own),
        data=MappingProxyType(data | every_hit(captured, numbering)),
        notices=tuple(notices), told_apart=tuple(told_apart), layout_read=layout.recognised(), passes=passes,
        script=capture.script,
        sha256=capture.sha256, seeds=tuple(capture.seeds), seconds=capture.seconds, error=capture.error,
        error_traceback=capture.error_traceback, error_at=error_place(capture), timed_out=capture.timed_out,
        markers=tuple(capture.markers),
        sources=MappingProxyType(dict(capture.sources)), misfed=MappingProxyType(misfed),
        modules_training=modules_training(captured))


def error_place(capture: Capture) -> dict[str, str | int] | None:
    """Where the script's error was raised in the student's code (the traceback's last frame in the script's folder):
    {"path", "line"} relative to the script's folder, a notebook's {"path", "location"} ("vit.ipynb, cell 7, line 3");
    None where no frame of theirs is known (an exit status, a signal, an error raised outside their folder)."""
    if capture.error_at is None:
        return None
    if capture.error_location:  # a notebook's cell (notebook.py), the script it ran as being gone
        return {"path": capture.script.name, "location": capture.error_location}
    file, line = capture.error_at
    try:
        path = Path(file).relative_to(capture.script.parent)
    except ValueError:
        return None
    return {"path": path.as_posix(), "line": line}


def _at_notebook_places(texts: list[str], capture: Capture) -> list[str]:
    """What the reading says about a notebook's marked lines (a shared line's hits not assigned) at the notebook's
    cell and line, as the run's own warnings are (notebook.py), not at the script the cells ran as."""
    scripts = [(Path(file), source) for file, source in capture.sources.items() if notebook_name(source)]
    said = []
    for text in texts:
        placed = text
        for script, source in scripts:
            placed = translate_error(placed, script, source)
        said.append(Notice(text.heading, placed) if isinstance(text, Notice) else placed)
    return said


BUNDLED_HITS = 16  # a marker hit more often than this writes its hits of one shape as one file, not one file each


def _data_entries(value: Any) -> list[tuple[str, torch.Tensor]]:
    """A captured value's tensors as data/ names them: the value's name, or for a dict of tensors every entry as
    ``<name>.<key>`` (a key's characters a file name cannot hold made ``_``; a key that then clashes with an earlier
    one is numbered by its place in the dict), so no entry is left out."""
    if value.kind != "dict":
        return [] if value.tensor is None else [(value.name, value.tensor)]
    named: dict[str, torch.Tensor] = {}
    for place, (key, tensor) in enumerate(value.tensor.items()):
        name = f"{value.name}.{re.sub(r'[^A-Za-z0-9_.-]', '_', str(key))}"
        named[f"{value.name}.{place}" if name in named else name] = tensor
    return list(named.items())


def every_hit(captured: Mapping[Marker, list[Hit]], numbering: str) -> dict[str, torch.Tensor]:
    """Every hit of every marked tensor (data/hit<i>_...), so a later layer or loop iteration is there to load; a
    line run thousands of times writes one file per value (data/hits_..., hits along the first axis), not thousands."""
    found = {}
    for marker, hits in captured.items():
        prefix = (f"{marker.number:02d}" if marker.numbering == numbering
                  else (marker.point or f"{marker.numbering}-{marker.number}"))
        by_name: dict[str, list[tuple[int, torch.Tensor]]] = {}
        for i, hit in enumerate(hits, 1):
            for value in hit.values:
                for name, tensor in _data_entries(value):
                    if 0 < tensor.numel() <= DATA_LIMIT:
                        by_name.setdefault(name, []).append((i, tensor))
        for name, numbered in by_name.items():
            tensors = [tensor for _, tensor in numbered]
            if len(numbered) == len(hits) > BUNDLED_HITS and len({(t.shape, t.dtype) for t in tensors}) == 1:
                fits = max(1, DATA_LIMIT // tensors[0].numel())  # hits past the data limit: left out
                found[f"hits_{prefix}_{name}"] = torch.stack(tensors[:fits])
            else:
                found |= {f"hit{i}_{prefix}_{name}": tensor for i, tensor in numbered}
    return found
