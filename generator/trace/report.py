"""Write the report of a traced script (pages.py builds its pages): the snapshot pages, the overview, the stages, the
guiding questions and the print view by the bundled reports' own templates and writer (generator.render.write_pages, over
a TracedRun: run.py), and snapshots.json, figures (the bundled drawings) and data/ in the bundled formats, so the site
machinery, the explorer and the PDF export read a trace as they read a bundled report."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import torch

from generator.catalogue import Report
from generator.checks import FAILED, PASSED
from generator.render import escape_text, write_pages
from generator.sources import fill
from generator.tensor_data import explore_info, write_tensor_data
from generator.tensors import json_number
from generator.trace.capture import Capture
from generator.trace.checking import catalogue_source
from generator.trace.pages import TracedPage, _spec, _tensor_of, build_pages, shown_pass
from generator.trace.run import INPUTS_WHY, Known, TracedRun, TraceReport, adopt_verdicts, id_labels
from generator.trace.verify import layout
from generator.version import package_version  # the run stamp names the package version

DATA_LIMIT = 4_000_000  # elements: larger tensors are summarised on their page but not shipped in data/


def snapshots_json(name: str, title: str, catalogue: Report, numbering: str, pages: list[TracedPage], stamp: dict[str, Any],
                   dims: dict[str, int], outcome: dict[str, Any]) -> dict[str, Any]:
    def entry(p: TracedPage) -> dict[str, Any]:
        base = {"number": p.snap.number, "label": p.label, "title": p.snap.title, "variable": p.variables if p.captured else p.snap.variable,
                "stage": p.snap.stage, "page": p.path, "captured": p.captured, "expected_shape": list(p.shape),
                "check": {key: value for key, value in p.check.json().items() if key != "status"},
                **({"checks": [c.json() for c in p.checks]}
                   if len(p.checks) > 1 else {}),
                "figures": [f["file"] for f in p.figures]}
        if not p.captured:
            return {**base, "shape": None, "dtype": None, "first": [], "stats": {}, "source": None, "tensors": []}
        view = p.main.view
        return {**base, "shape": list(view.shape), "dtype": view.dtype, "first": [json_number(v) for v in view.first(16)],
                "stats": {k: json_number(v) for k, v in view.stats.items()}, "layout": {"status": p.layout.status.value, "note": p.layout.note},
                "source": {"path": p.main.source.path, "line": p.main.source.first, "marker_line": p.main.marker_line},
                "tensors": [{"name": t.name, "variable": t.variable, "shape": list(t.view.shape),
                             "source": {"path": t.source.path, "line": t.source.first}} for t in p.tensors]}

    return {
        "model": name, "title": title, "short_title": name, "order": 100, "traced": True, "catalogue": numbering,
        "seed": stamp["seeds"][0] if stamp["seeds"] else None, "device": ", ".join(stamp["devices"]), "dtype": None,
        "torch": stamp["torch"], "weights": "the script's own", "inputs": {"script": stamp["script"], "sha256": stamp["sha256"]},
        "summary": f"{title}: {sum(p.captured for p in pages)} of {len(pages)} snapshots captured", "facts": [], "dims": dims,
        "outcome": outcome,
        "stages": [{"key": s.key, "title": s.title, "index": f"{s.key}/index.md", "pages": [p.path for p in pages if p.snap.stage == s.key]}
                   for s in catalogue.stages],
        "snapshots": [entry(p) for p in pages],
        "extra_pages": [],
    }


def render(out: Path, name: str, catalogue: Report, numbering: str, capture: Capture, hit: int, command: str,
           timeout: float | None) -> dict[str, Any]:
    """Write the report into ``out`` (a staging folder); return its summary (counts, first failure)."""
    pages, dims = build_pages(catalogue, numbering, capture, hit)
    hit = shown_pass(pages)  # a --hit past the last pass shows the last one, and the checks and texts name it
    adopt_verdicts(pages)
    seeds = list(dict.fromkeys(capture.seeds))
    stamp = {
        "script": capture.script.name, "sha256": capture.sha256, "argv": capture_argv(command), "seeds": seeds,
        "devices": sorted({t.device for p in pages for t in p.tensors}) or ["cpu"], "torch": torch.__version__,
        "python": platform.python_version(), "package": package_version(), "seconds": capture.seconds, "command": command,
        "weights": "the script's own",
        **({"seed": seeds[0]} if seeds else {}),
    }
    captured = [p for p in pages if p.captured]
    failed = sorted((p for p in pages if p.check.status == FAILED), key=lambda p: (p.order, p.snap.number))
    counts = {"captured": len(captured), "total": len(pages), "passed": sum(p.check.status == PASSED for p in pages),
              "failed": len(failed), "unchecked": sum(not p.check.checkable for p in captured)}
    outcome = {"error": capture.error, "timed_out": capture.timed_out, "timeout": timeout, "finished": capture.finished,
               "warnings": capture.warnings,
               "first_failure": f"{failed[0].label} {failed[0].snap.title}: {failed[0].check.name}" if failed else None, "counts": counts}
    title = f"Trace of {capture.script.name}"

    tensors = {}
    for page in captured:
        names = [t.name for t in page.tensors if 0 < t.view.numel <= DATA_LIMIT]
        page.data_written = len(names) == len(page.tensors)
        tensors |= {t.name: t.view.tensor for t in page.tensors if t.name in names}
    source, labels = catalogue_source(catalogue, pages, dims, hit) if catalogue.options is not None else (None, {})
    tensors |= _all_hits(capture, numbering)
    explorers, axis_labels, axes, groups = _attention(pages, numbering, dims)
    tensors |= explorers
    write_tensor_data(out, tensors, labels=axis_labels, axes=axes, attention=groups, extra={"report": name, "dims": dims})

    facts = [("Script", capture.script.name), ("Captured", f"{counts['captured']} of {counts['total']} {catalogue.short_title} snapshots"),
             ("Checks", f"{counts['passed']} passed, {counts['failed']} failed, {counts['unchecked']} not checkable")]
    known_inputs = {"facts": facts, "summary": f"{title}: {counts['captured']} of {counts['total']} snapshots captured", "layer": hit,
                    **id_labels(catalogue.key, pages, dims)}
    run = TracedRun(
        report=catalogue.key, tensors=source, labels=labels, captured={p.label for p in captured},
        markers={p.label: p.marker_example for p in pages},
        inputs=Known(known_inputs, "input", INPUTS_WHY), dims=Known(dims, "dimension", "not bound from your tensors"),
        facts=stamp, device=", ".join(stamp["devices"]),
        sources={fill(str(ref), source.places): (t.source.path, t.marker_line) for p in captured
                 for ref, t in zip(getattr(p.snap, "tensors", ()) or (), p.tensors)} if source is not None else {},
    )
    trace = TraceReport(title=title, catalogue=catalogue, command=command, counts=counts, outcome=outcome,
                        first_failure=failed[0] if failed else None, run=run, own=numbering == "none", data_limit=DATA_LIMIT,
                        explore=lambda page: _explore_info(page, {g["key"] for g in groups}, hit))
    not_drawn = draw_figures(catalogue, pages, run, out) if source is not None else {}
    for page in pages:
        page.not_drawn = not_drawn.get(page.snap.number, [])
        trace.drawn.update({Path(f["file"]).stem: f["caption"] for f in page.figures})
    write_pages(catalogue, run, pages, out, trace=trace)
    data = snapshots_json(name, title, catalogue, numbering, pages, stamp, dims, outcome)
    (out / "snapshots.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"counts": counts, "first_failure": outcome["first_failure"], "pages": pages}


def _attention(pages: list[TracedPage], numbering: str, dims: dict[str, int]):
    """For the explorer: every hit of each captured attention-probability snapshot, in the catalogue's layout
    (B, h, queries, keys), as one group whose "layers" are the hits (a loop over layers gives one hit per layer)."""
    tensors, labels, axes, groups = {}, {}, {}, []
    by_number = {p.snap.number: p for p in pages}
    for number, (rows, cols) in (_spec(numbering).attention if _spec(numbering) is not None else {}).items():
        page = by_number.get(number)
        if page is None or not page.captured or rows not in dims or cols not in dims or "h" not in dims:
            continue
        names = []
        for i, tensor in enumerate(page.hit_values[0] if page.hit_values else [], 1):
            found = layout(tensor, page.shape, dims, {}) if tensor is not None else None
            if found is None or found.canonical is None or found.canonical.dim() != 4 or found.canonical.numel() > DATA_LIMIT:
                break
            name = f"attention_{number:02d}_hit{i}"
            tensors[name] = found.canonical
            axes[name] = (None, "heads", f"positions_{rows}", f"positions_{cols}")
            names.append(name)
        if names:
            for dim in (rows, cols):
                labels[f"positions_{dim}"] = [f"position {j}" for j in range(dims[dim])]
            labels["heads"] = [f"head {j + 1}" for j in range(dims["h"])]
            groups.append({"key": f"snapshot-{number}", "title": f"{page.label} {page.snap.title}", "unit": "hit", "layers": names,
                           "rows": f"positions_{rows}", "cols": f"positions_{cols}", "image": None})
    return tensors, labels, axes, groups


def _explore_info(page: TracedPage, groups: set[str], hit: int) -> dict[str, Any]:
    """_explore.md.j2's data for a traced page: the bundled reports' layout, with this snapshot's explorer if it has one."""
    info = explore_info(page)
    key = f"snapshot-{page.snap.number}"
    if key in groups:
        info["group"], info["layer"] = key, hit - 1
    return info


NEUTRAL_CAPTIONS = {  # the catalogue's captions describe our models; a trace's figures say only what is drawn
    "attention_heads": "one panel per head: row = query position, column = key position",
    "matrix": "one row per position, one column per feature",
    "positional": "what was added to each position (left), and the sum (right)",
    "mask": "allowed in white, blocked in grey",  # the cells say how (0 / −∞, or ✓ for a boolean mask)
}


def draw_figures(catalogue: Any, pages: list[TracedPage], run: TracedRun, out: Path) -> dict[int, list[str]]:
    """Every figure of a captured snapshot drawn with the catalogue's own drawing from the user's tensors, where the
    tensors it declares were captured: axes a drawing would label with words the trace lacks are numbered instead. A
    figure that needs what a trace lacks (the sentence's words, the image, the weights, a snapshot not captured) is not
    drawn; returns snapshot number -> "caption — needs ..." for each, read from what stopped it. A figure drawn from a
    snapshot whose check failed says so (its caption says only what is drawn); a figure not drawn on a failed page is
    not named by the catalogue's caption, which describes the step computed right."""
    from dataclasses import fields, replace

    from generator.checks import INPUT

    by_id = {fig.id: fig for fig in getattr(catalogue, "figures", ())}
    by_label = {p.label: p for p in pages}
    outcome: dict[str, tuple[bool, str]] = {}  # figure id -> (drawn, caption or what it needs): each drawn once
    not_drawn: dict[int, list[str]] = {}
    for page in pages:
        for fid in getattr(page.snap, "figures", ()) if page.captured else ():
            fig = by_id.get(fid)
            if fig is None:
                continue
            what = NEUTRAL_CAPTIONS.get(fig.drawing.key(), f"drawn with the {catalogue.short_title} report's "
                                                           f"{fig.drawing.key().replace('_', ' ')} drawing")
            if fid not in outcome:
                kinds = fig.drawing.parameters()
                numbered = {f.name: None for f in fields(fig.drawing) if kinds.get(f.name) == INPUT and f.default is None
                            and getattr(fig.drawing, f.name) is not None and str(getattr(fig.drawing, f.name)) not in run.inputs}
                drawing = replace(fig.drawing, **numbered)  # optional word labels the trace does not know: the axes are numbered
                target = out / "figures" / f"{fid}.png"
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    for ref in drawing.inputs():
                        run.cpu(ref)  # a tensor it declares and the trace lacks: says which snapshot
                    drawing.draw(run, target)
                except TraceReport.LACKS as exc:
                    target.unlink(missing_ok=True)
                    outcome[fid] = (False, f"needs {TraceReport.needs(exc)}")
                else:
                    sources = [by_label[label.snapshot] for label in dict.fromkeys(run.labels.get(run.name(ref)) for ref in drawing.inputs())
                               if label is not None and label.snapshot in by_label] or [page]
                    whose = ", ".join(f"{p.variables} ({p.label})" for p in sources)
                    failed = list({p.label: p for p in [page, *sources] if p.check.status == FAILED}.values())
                    refuted = (f" The check failed on {', '.join(f'{p.label} ({p.check.name})' for p in failed)}: the figure shows "
                               "what your tensors hold, not the step computed right." if failed else "")
                    outcome[fid] = (True, escape_text(f"{sources[0].snap.title}, from your {whose}: {what}.{refuted}"))
            drawn, text = outcome[fid]
            if drawn:
                page.figures.append({"file": f"figures/{fid}.png", "caption": text})
            else:  # the catalogue's caption describes the step computed right: not where this page's check refuted it
                caption = (f"{page.snap.title}: the {catalogue.short_title} report's {fig.drawing.key().replace('_', ' ')} figure (its "
                           "caption describes the step computed right, and the check failed)" if page.check.status == FAILED else fig.caption)
                not_drawn.setdefault(page.snap.number, []).append(f"{caption} — {text}")
    return not_drawn


def capture_argv(command: str) -> list[str]:
    return command.split(" -- ", 1)[1].split() if " -- " in command else []


def _all_hits(capture: Capture, numbering: str) -> dict[str, torch.Tensor]:
    """Every hit of every marked tensor (data/hits/...), so a later layer or loop iteration is there to load."""
    found = {}
    for marker, hits in capture.hits.items():
        prefix = f"{marker.number:02d}" if marker.numbering == numbering else (marker.point or f"{marker.numbering}-{marker.number}")
        for i, hit in enumerate(hits, 1):
            for value in hit.values:
                tensor, _ = _tensor_of(value)
                if tensor is not None and 0 < tensor.numel() <= DATA_LIMIT:
                    found[f"hit{i}_{prefix}_{value.name}"] = tensor
    return found
