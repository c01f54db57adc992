"""Write the report of a traced script (pages.py builds its pages): the snapshot pages, the overview, the stages, the
guiding questions, the print view, snapshots.json, figures and data/ — with the bundled reports' Jinja environment, page
layout, drawings, explorer data format and site navigation (generator/site/plugin.py reads snapshots.json)."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import torch

from generator.catalogue import Report
from generator.render import environment, escape_text
from generator.tensor_data import explore_info, write_tensor_data
from generator.tensors import fmt, json_number
from generator.trace.capture import Capture
from generator.trace.pages import TracedPage, _spec, _tensor_of, build_pages, catalogue_source
from generator.trace.verify import layout

DATA_LIMIT = 4_000_000  # elements: larger tensors are summarised on their page but not shipped in data/


def explanation(page: TracedPage, catalogue: Report, dims: dict[str, int]) -> str:
    """What the snapshot holds, in the user's numbers: the named shape bound from their tensors, and the values."""
    x = page.main.view
    named = []
    for expression, size in zip(page.shape, (page.layout.expected or x.shape) if page.layout else x.shape):
        meaning = catalogue.dims_legend.get(expression)
        text = f"{expression} = {size}" + (f" ({meaning})" if meaning else "")
        if text not in named:
            named.append(text)
    stats = x.stats
    text = (f"`{page.main.variable}` is the step *{page.snap.title}* ({page.label}) of the {catalogue.short_title} report's catalogue. "
            f"In your run it holds {x.numel:,} values of shape `{tuple(x.shape)}`; the catalogue names this shape "
            f"({', '.join(page.shape)}), here {'; '.join(named)}. ")
    if x.numel:
        text += (f"The values range from {fmt(stats['min'])} to {fmt(stats['max'])} (mean {fmt(stats['mean'])}, standard "
                 f"deviation {fmt(stats['std'])}).")
    if page.doc:
        text += (f"\n\nIn the catalogue's own model this tensor is declared as: *{escape_text(page.doc)}*. Your code may compute it "
                 "differently; the check below says whether what you captured has the property the step needs.")
    if page.snap.differs:
        text += f"\n\nHow the bundled model differs from the seed at this step: {page.snap.differs}"
    return text


def snapshots_json(name: str, title: str, catalogue: Report, numbering: str, pages: list[TracedPage], stamp: dict[str, Any],
                   dims: dict[str, int], outcome: dict[str, Any]) -> dict[str, Any]:
    def entry(p: TracedPage) -> dict[str, Any]:
        base = {"number": p.snap.number, "label": p.label, "title": p.snap.title, "variable": p.variables if p.captured else p.snap.variable,
                "stage": p.snap.stage, "page": p.path, "captured": p.captured, "expected_shape": list(p.shape),
                "check": {"name": p.check.name, "passed": p.check.passed, "detail": p.check.detail},
                **({"checks": [part.json() for part in p.check.parts]} if p.check.parts else {}), "figures": [f["file"] for f in p.figures]}
        if not p.captured:
            return {**base, "shape": None, "dtype": None, "first": [], "stats": {}, "source": None, "tensors": []}
        view = p.main.view
        return {**base, "shape": list(view.shape), "dtype": view.dtype, "first": [json_number(v) for v in view.first(16)],
                "stats": {k: json_number(v) for k, v in view.stats.items()}, "layout": {"status": p.layout.status, "note": p.layout.note},
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
    for page in pages:
        if page.captured:
            page.explanation = explanation(page, catalogue, dims)
    stamp = {
        "script": capture.script.name, "sha256": capture.sha256, "argv": capture_argv(command), "seeds": list(dict.fromkeys(capture.seeds)),
        "devices": sorted({t.device for p in pages for t in p.tensors}) or ["cpu"], "torch": torch.__version__,
        "python": platform.python_version(), "seconds": capture.seconds, "command": command,
    }
    captured = [p for p in pages if p.captured]
    failed = sorted((p for p in pages if p.check.passed is False), key=lambda p: (p.order, p.snap.number))
    counts = {"captured": len(captured), "total": len(pages), "passed": sum(p.check.passed is True for p in pages),
              "failed": len(failed), "unchecked": sum(p.check.passed is None for p in captured)}
    outcome = {"error": capture.error, "timed_out": capture.timed_out, "timeout": timeout, "finished": capture.finished,
               "warnings": capture.warnings,
               "first_failure": f"{failed[0].label} {failed[0].snap.title}: {failed[0].check.name}" if failed else None, "counts": counts}
    title = f"Trace of {capture.script.name}"
    by_stage = {s.key: [p for p in pages if p.snap.stage == s.key] for s in catalogue.stages}
    env = environment()
    common = {"title": title, "catalogue": catalogue, "stamp": stamp, "counts": counts, "first_failure": failed[0] if failed else None,
              "outcome": outcome, "dims": dims, "stages": catalogue.stages, "by_stage": by_stage, "pages": pages,
              "questions": catalogue.questions, "inputs": {}, "code": code}

    tensors = {}
    for page in captured:
        names = [t.name for t in page.tensors if 0 < t.view.numel <= DATA_LIMIT]
        page.data_written = len(names) == len(page.tensors)
        tensors |= {t.name: t.view.tensor for t in page.tensors if t.name in names}
    source, _ = catalogue_source(catalogue, pages, dims, hit) if catalogue.options is not None else (None, {})
    draw_figures(catalogue, pages, source, out)
    tensors |= _all_hits(capture, numbering)
    explorers, labels, axes, groups = _attention(pages, numbering, dims)
    tensors |= explorers
    write_tensor_data(out, tensors, labels=labels, axes=axes, attention=groups, extra={"report": name, "dims": dims})
    common["explore"] = lambda page: _explore_info(page, {g["key"] for g in groups}, hit)

    def write(rel: str, template: str, **context: Any) -> str:
        text = env.get_template(f"trace/{template}").render(**common, **context)
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return text

    for page in pages:
        write(page.path, "snapshot.md.j2", page=page)
    for stage in catalogue.stages:
        write(f"{stage.key}/index.md", "stage.md.j2", stage=stage, stage_pages=by_stage[stage.key])
    write("index.md", "overview.md.j2")
    write("questions.md", "questions.md.j2")
    write("print.md", "print.md.j2")
    data = snapshots_json(name, title, catalogue, numbering, pages, stamp, dims, outcome)
    (out / "snapshots.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"counts": counts, "first_failure": outcome["first_failure"], "pages": pages}


def code(value: Any) -> str:
    """User text as inline code: every character Markdown, HTML or a table could read is a character reference."""
    return f"<code>{escape_text(value)}</code>"


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


class _PositionLabels(dict):
    """Axis labels for drawings: a trace knows no words, so every axis is labelled with positions."""

    def __missing__(self, key: str) -> list[str]:
        return [str(i) for i in range(8192)]


class _DrawingSource:
    """What a generic drawing (generator/figures.py) reads of a run, over the captured tensors."""

    report = "trace"  # no report's exploration: axes are numbered
    declared: dict[str, Any] = {}

    def __init__(self, source: Any) -> None:
        self.source, self.inputs = source, _PositionLabels()

    def cpu(self, ref: Any) -> torch.Tensor:
        return self.source.cpu(ref)

    def name(self, ref: Any) -> str:
        return self.source.name(ref)


NEUTRAL_CAPTIONS = {  # the catalogue's captions describe our models; a trace's figures say only what is drawn
    "attention_heads": "one panel per head: row = query position, column = key position",
    "matrix": "one row per position, one column per feature",
    "positional": "what was added to each position (left), and the sum (right)",
    "mask": "allowed (0) in white, blocked (−inf) in grey",
}


def draw_figures(catalogue: Any, pages: list[TracedPage], source: Any, out: Path) -> int:
    """The catalogue's figures whose drawing needs only tensors and axis labels (heat maps, attention grids, the mask),
    drawn from the captured tensors with the bundled drawings; figures that need the run's words, image or weights are
    left out. Returns how many were drawn."""
    from generator.figures import AttentionHeads, Mask, Matrix, Positional

    if source is None:
        return 0
    by_id = {fig.id: fig for fig in getattr(catalogue, "figures", ())}
    drawn = 0
    for page in pages:
        for fid in getattr(page.snap, "figures", ()) if page.captured else ():
            fig = by_id.get(fid)
            if fig is None or not isinstance(fig.drawing, (AttentionHeads, Mask, Matrix, Positional)):
                continue
            if not all(source.has(ref) for ref in fig.drawing.inputs()):
                continue
            target = out / "figures" / f"{fid}.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            from dataclasses import replace

            from generator.checks import INPUT

            unlabelled = replace(fig.drawing, **{name: None for name, kind in fig.drawing.parameters().items() if kind == INPUT})
            try:
                unlabelled.draw(_DrawingSource(source), target)
            except (RuntimeError, ValueError, IndexError):  # a tensor the drawing cannot read (an odd rank): no figure
                target.unlink(missing_ok=True)
                continue
            caption = f"{page.label} {page.snap.title}, your {page.variables}: {NEUTRAL_CAPTIONS[fig.drawing.key()]}."
            page.figures.append({"file": f"figures/{fid}.png", "caption": caption})
            drawn += 1
    return drawn


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
