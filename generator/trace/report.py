"""Write the report of a traced script (pages.py builds its pages): the snapshot pages, the overview, the stages, the
guiding questions and the print view by the bundled reports' own templates and writer
(transformer_trace.render.write_pages, over the run the capture becomes at its boundary: run.py traced_run),
snapshots.json by the one writer (generator/ snapshots_file.py), figures by the bundled drawings and data/ with the
report's own explorer groups, so the site machinery, the explorer and the PDF export read a trace as they read a bundled
report."""

from __future__ import annotations

import platform
import shlex
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import torch

from transformer_trace.build import draw_all
from transformer_trace.catalogue import Report
from transformer_trace.checks import FAILED, INPUT, PASSED, UNRECOGNISED, CheckResult
from transformer_trace.pages import SnapshotPage, snapshot_pages
from transformer_trace.progress import Progress
from transformer_trace.render import escape_text, write_pages
from transformer_trace.run import ModelRun
from transformer_trace.snapshots_file import snapshots_json, write_snapshots_json
from transformer_trace.sources import NotCheckable, TensorDict, fill
from transformer_trace.tensor_data import (attention_group_of, attention_groups, axis_labels, head_labels, run_labels,
                                   write_tensor_data)
from transformer_trace.trace.reading.capture_reading import CaptureReading
from transformer_trace.trace.reading.checking import judge
from transformer_trace.trace.reading.pages import DATA_LIMIT, SnapshotReading, traced_contents
from transformer_trace.trace.reading.records import TensorLabel, places_at_layer
from transformer_trace.trace.reading.run import TracedRun, TraceReport, id_labels, trace_overview, traced_run
from transformer_trace.trace.reading.variants import dims_as_read, recognised  # what the overview says was recognised
from transformer_trace.trace.verdicts import trace_title
from transformer_trace.version import package_version  # the run stamp names the package version


def in_data_flow_order(failed: list[SnapshotPage]) -> list[SnapshotPage]:
    """Failed pages, the earliest in the model's data flow first: the catalogue numbers its steps along the forward
    pass, so a step the script happened to run early (a mask built before the forward pass) is not named before the
    step where a bug first shows; script order only breaks ties."""
    return sorted(failed, key=lambda p: (p.snap.number, p.provenance.order if p.provenance is not None else 0))


def first_failure_text(page: SnapshotPage) -> str:
    """The first failure as the terminal and snapshots.json say it: the snapshot, then what is wrong (the evidence's
    diagnosis, else the claim), then where the marked statement is."""
    check = page.check
    said = f"{check.evidence.message} ({check.name})" if check.evidence is not None else check.name
    where = page.main.marked_at if page.captured and page.tensors else ""
    return f"{page.label} {page.snap.title}: {said}" + (f" — marked at {where}" if where else "")


def render(out: Path, name: str, reading: CaptureReading, command: str, timeout: float | None) -> dict[str, Any]:
    """Write the report of a capture, from its one reading (capture_reading.py), into ``out`` (a staging folder); return
    its summary (counts, first failure). Each stage is built once, in order: the run (from the reading), the checks'
    judgements (run on the run), the data and figures, the pages."""
    catalogue, numbering, dims = reading.catalogue, reading.numbering, dict(reading.dims)
    readings, source = list(reading.snapshots), reading.source
    run = reading_run(reading, command)  # a capture becomes a run, then the checks judge it
    judged = judge(run, reading)
    captured = [r for r in readings if r.captured]
    verdicts = {r.snap.number: judged[r.snap.number].verdict for r in readings}
    counts = {"captured": len(captured), "total": len(readings),
              "passed": sum(v.status == PASSED for v in verdicts.values()),
              "failed": sum(v.status == FAILED for v in verdicts.values()),
              "unrecognised": sum(verdicts[r.snap.number].status == UNRECOGNISED for r in captured),
              "unchecked": sum(not verdicts[r.snap.number].checkable for r in captured)}
    explorers, axis_words, axes, groups = explorer_data(catalogue, readings, source, run, dims)
    write_tensor_data(out, dict(reading.data) | explorers, labels=axis_words, axes=axes, attention=groups,
                      extra={"report": name, "dims": dims})
    drawn, not_drawn = draw_figures(reading, verdicts, run, out) if source is not None else ({}, {})
    # the pages, built once, here
    pages = snapshot_pages(catalogue, traced_contents(reading.by_number, judged, drawn, not_drawn, source))
    failed = in_data_flow_order([p for p in pages if p.check.status == FAILED])
    outcome = {"error": reading.error, "timed_out": reading.timed_out, "timeout": timeout, "finished": reading.finished,
               "error_at": reading.error_at, "traceback": reading.error_traceback, "warnings": list(reading.notices),
               "recognised": recognised(pages, reading, dims),
               "first_failure": first_failure_text(failed[0]) if failed else None,
               "counts": counts}
    trace = TraceReport(counts=counts, outcome=outcome, first_failure=failed[0] if failed else None,
                        drawn={Path(f["file"]).stem: f["caption"] for page in pages for f in page.figures})
    title = trace_title(reading.script.name)
    overview = trace_overview(catalogue, trace, dims_as_read(readings, dims))
    write_pages(catalogue, run, pages, out, overview=overview, title=escape_text(title))
    identity = {"model": name, "title": title, "short_title": name, "order": 100}
    write_snapshots_json(out, snapshots_json(identity, catalogue, run, pages, extra_pages=[], traced=True,
                                             catalogue=numbering, outcome=outcome, checked=[trace.checks_fact]))
    return {"counts": counts, "first_failure": outcome["first_failure"], "pages": pages}


def reading_run(reading: CaptureReading, command: str) -> TracedRun:
    """The run a capture's reading becomes, before any check runs: what the checks judge (checking.py ``judge``), in
    `trace` and in tests/variants/judge.py, which writes no pages."""
    readings, dims, hit = list(reading.snapshots), dict(reading.dims), reading.hit
    inputs, stamp = run_inputs(reading, readings, dims, hit), run_stamp(reading, readings, command)
    return traced_run(reading, inputs, stamp, command)


def run_stamp(reading: CaptureReading, readings: list[SnapshotReading], command: str) -> dict[str, Any]:
    """The traced run's stamp: the script and its arguments, the seeds it set, the devices its tensors were on."""
    seeds = list(dict.fromkeys(reading.seeds))
    return {
        "script": reading.script.name, "sha256": reading.sha256, "argv": capture_argv(command), "seeds": seeds,
        "devices": sorted({t.device for r in readings for t in r.tensors}) or ["cpu"], "torch": torch.__version__,
        "python": platform.python_version(), "package": package_version(), "seconds": reading.seconds,
        "command": command,
        "weights": "the script's own",
        **({"seed": seeds[0]} if seeds else {}),
    }


def run_inputs(reading: CaptureReading, readings: list[SnapshotReading], dims: dict[str, int],
               hit: int) -> dict[str, Any]:
    """What the traced run knows of its input, all read from the capture before any check runs: the script, the
    snapshots captured (the facts table's rows of the run; the checks' own row is the judgements', TraceReport
    ``checks_fact``), the pass the pages show, the IDs its report's blocks label positions with."""
    captured = f"{sum(r.captured for r in readings)} of {len(readings)}"
    facts = [("Script", reading.script.name), ("Captured", f"{captured} {reading.catalogue.short_title} snapshots")]
    return {"script": reading.script.name, "sha256": reading.sha256, "facts": facts,
            "summary": f"Trace of {reading.script.name}: {captured} snapshots captured", "layer": hit,
            **id_labels(reading.catalogue, reading.by_number, dims)}


def explorer_data(catalogue: Report, pages: list[SnapshotReading], source: TensorDict | None, run: ModelRun,
                  dims: dict[str, int]) -> tuple[dict[str, torch.Tensor], dict[str, list[str]], dict, list[dict]]:
    """The explorer's tensors, label lists, axis labels and groups, by the bundled reports' own builder
    (generator/tensor_data.py): every hit of a captured attention snapshot filed under its record name (hit k under
    layer k's), grouped by the report's exploration; each axis labelled from the snapshot's declared named shape, the
    label lists read from the run (the user's IDs where the trace knows them, else numbered), checked against the
    shape."""
    exploration = getattr(catalogue, "exploration", None)
    if exploration is None or source is None:
        return {}, {}, {}, []
    shapes = {}  # record name -> the declared named shape of the snapshot that captured it
    for page in pages:
        for template in page.snap.tensors[:1] if page.captured else ():
            for h in range(1, len(page.hit_values[0]) + 1 if page.hit_values else 1):
                places = places_at_layer(catalogue, h, {})
                if places is not None:
                    shapes[fill(str(template), places)] = page.shape
    names = [n for n in source.tensors if n in shapes and attention_group_of(exploration, n)
             and 0 < source.tensors[n].numel() <= DATA_LIMIT and source.tensors[n].dim() == len(shapes[n])]
    labels = _labels(exploration, run, dims)
    # a tensor whose axis has another length than its label list (keys at fewer positions than the queries: a reduced
    # key/value sequence, trace/reading/reduced_keys.py) is not one the explorer's grid can label: left out of it
    names = [n for n in names if all(key not in labels or len(labels[key]) == size for key, size in
                                     zip((exploration.axis_labels.get(s) for s in shapes[n]), source.tensors[n].shape))]
    tensors = {n: source.tensors[n] for n in names}
    axes = {n: axis_labels(exploration, shapes[n], tuple(t.shape), labels, n) for n, t in tensors.items()}
    return tensors, labels, axes, attention_groups(exploration, names)


def _labels(exploration: Any, run: ModelRun, dims: dict[str, int]) -> dict[str, list[str]]:
    """The run's label lists where the trace knows what they read (the user's token IDs), else each declared axis
    numbered."""
    numbered = {key: [f"position {j}" for j in range(dims[symbol])] for symbol, key in exploration.axis_labels.items()
                if symbol in dims} | head_labels(dims)
    try:
        known = run_labels(exploration, run)
    except NotCheckable:
        known = {}
    return {**numbered, **{k: v for k, v in known.items() if k not in numbered or len(v) == len(numbered[k])}}


NEUTRAL_CAPTIONS = {  # the catalogue's captions describe our models; a trace's figures say only what is drawn
    "attention_heads": "one panel per head: row = query position, column = key position",
    "matrix": "one row per position, one column per feature",
    "positional": "what was added to each position (left), and the sum (right)",
    "mask": "allowed in white, blocked in grey",  # the cells say how (0 / −∞, or ✓ for a boolean mask)
}


def draw_figures(reading: CaptureReading, verdicts: dict[int, CheckResult], run: ModelRun,
                 out: Path) -> tuple[dict[int, tuple[dict[str, str], ...]], dict[int, tuple[str, ...]]]:
    """Every figure of a captured snapshot drawn by the bundled reports' drawer (generator/build.py ``draw_all``) with
    the catalogue's own drawing from the user's tensors; axes a drawing would label with words the trace lacks are
    numbered instead. A figure that needs what a trace lacks (the sentence's words, the image, the weights, a snapshot
    not captured) is not drawn; returns, by snapshot number, the figures drawn (file, caption) and a "caption — needs
    ..." for each not drawn, read from what stopped it."""
    catalogue, pages, labels, by_label = reading.catalogue, reading.snapshots, dict(reading.labels), reading.by_label
    by_id = {fig.id: fig for fig in catalogue.figures}
    wanted = dict.fromkeys(fid for page in pages if page.captured for fid in page.snap.figures if fid in by_id)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    drawings = [(fid, numbered_drawing(by_id[fid].drawing, run)) for fid in wanted]
    _, lacked = draw_all(drawings, run, out / "figures", None, Progress(enabled=False), catalogue.short_title,
                         parallel=False)
    drawn: dict[int, list[dict[str, str]]] = {}
    not_drawn: dict[int, list[str]] = {}
    captions: dict[str, str] = {}  # figure id -> its caption, written for the first page that shows it
    for page in pages:
        for fid in page.snap.figures if page.captured else ():
            if fid not in by_id:
                continue
            fig = by_id[fid]
            if fid not in lacked:
                captions.setdefault(fid, _caption(catalogue, fig, page, run, labels, by_label, verdicts))
                drawn.setdefault(page.snap.number, []).append({"file": f"figures/{fid}.png", "caption": captions[fid]})
            else:  # the catalogue's caption describes the step computed right: not where this page's check refuted it
                name = fig.drawing.key().replace("_", " ")
                caption = (f"{page.snap.title}: the {catalogue.short_title} report's {name} figure (its caption "
                           "describes the step computed right, and the check failed)"
                           if verdicts[page.snap.number].status == FAILED else fig.caption)
                not_drawn.setdefault(page.snap.number, []).append(f"{caption} — needs {lacked[fid].needed}")
    return ({number: tuple(figures) for number, figures in drawn.items()},
            {number: tuple(lines) for number, lines in not_drawn.items()})


def numbered_drawing(drawing: Any, run: ModelRun) -> Any:
    """The drawing with its optional word labels the run does not know left out: those axes are numbered."""
    kinds = drawing.parameters()
    numbered = {f.name: None for f in fields(drawing) if kinds.get(f.name) == INPUT and f.default is None
                and getattr(drawing, f.name) is not None and str(getattr(drawing, f.name)) not in run.inputs}
    return replace(drawing, **numbered)


def _caption(catalogue: Report, fig: Any, page: SnapshotReading, run: ModelRun, labels: dict[str, TensorLabel],
             by_label: Mapping[str, SnapshotReading], verdicts: dict[int, CheckResult]) -> str:
    """A drawn figure's caption: what is drawn, from which of the user's variables; where a check of a snapshot it
    draws failed, that it shows what the tensors hold, not the step computed right (the catalogue's caption would)."""
    what = NEUTRAL_CAPTIONS.get(fig.drawing.key(), f"drawn with the {catalogue.short_title} report's "
                                                   f"{fig.drawing.key().replace('_', ' ')} drawing")
    drawing = numbered_drawing(fig.drawing, run)
    shown = dict.fromkeys(labels.get(run.name(ref)) for ref in drawing.inputs())
    sources = [by_label[label.snapshot] for label in shown
               if label is not None and label.snapshot in by_label] or [page]
    whose = ", ".join(f"{p.variables} ({p.label})" for p in sources)
    failed = list({p.label: p for p in [page, *sources] if verdicts[p.snap.number].status == FAILED}.values())
    said = ", ".join(f"{p.label} ({verdicts[p.snap.number].name})" for p in failed)
    refuted = (f" The check failed on {said}: the figure shows what your tensors hold, not the step computed right."
               if failed else "")
    return escape_text(f"{sources[0].snap.title}, from your {whose}: {what}.{refuted}")


def capture_argv(command: str) -> list[str]:
    """The script's arguments, as the list it was given: the command is written with shlex.join, so its tokens after
    the first bare ``--`` are exactly them (a path or an argument holding spaces or " -- " is one token)."""
    try:
        tokens = shlex.split(command)
    except ValueError:  # not a command shlex.join wrote
        return []
    return tokens[tokens.index("--") + 1:] if "--" in tokens else []
