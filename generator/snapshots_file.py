"""snapshots.json: the machine-readable record of one report's run, one schema for a bundled report and a traced script.

The schema is documented on the How-it-works page (docs/how-it-works.md, "snapshots.json"); the MkDocs plugin, the
landing page, the PDF export and the site's API read it. A bundled report's run records every snapshot; a traced
script's (generator/trace/) may not have captured some: their entries say so (``captured`` false, values null), and
the keys only a traced script has (``traced``, ``catalogue``, ``outcome``; per snapshot ``captured``, ``layout``,
``source.marker_line``, ``tensors[].variable``) are absent from a bundled report's file, which keeps its bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformer_trace.tensors import json_number

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report
    from transformer_trace.checks import CheckResult
    from transformer_trace.pages import SnapshotPage, TensorSection
    from transformer_trace.run import ModelRun


def write_snapshots_json(out_dir: Path, data: dict[str, Any]) -> None:
    (out_dir / "snapshots.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def snapshots_json(identity: dict[str, Any], report: Report, run: ModelRun, pages: Sequence[SnapshotPage],
                   checked: Sequence[tuple[str, str]] = (), **after: Any) -> dict[str, Any]:
    """The file's content: ``identity`` (model, title, short_title, order: where the site lists it), the run's stamp
    read from ``run``, its facts and those its checks add (``checked``: a trace's counts, trace/reading/run.py
    ``TraceReport.checks_fact``), the stages and snapshots of ``pages``, then ``after`` (extra_pages; a trace's own
    keys)."""
    stamp = run.stamp()
    return {
        **identity,
        "seed": run.seed,
        "device": run.device,
        "dtype": stamp.get("dtype"),
        "torch": stamp["torch"],
        "weights": run.weights,
        "inputs": {k: v for k, v in run.inputs.items() if isinstance(v, (str, int, float))},
        "summary": run.inputs.get("summary", ""),
        "facts": [*run.inputs.get("facts", []), *checked],
        "dims": dict(run.dims),
        "stages": [
            {"key": s.key, "title": s.title, "index": f"{s.key}/index.md",
             "pages": [p.path for p in pages if p.snap.stage == s.key]}
            for s in report.stages
        ],
        "snapshots": [snapshot_entry(p) for p in pages],
        **after,
    }


def check_entry(check: CheckResult) -> dict[str, Any]:
    """A verdict: ``passed`` true, false, or null when not judged (CheckResult.json, the one place of that rule); its
    ``status`` only where ``passed`` alone does not tell it (unrecognised, not checkable alike null)."""
    return {key: value for key, value in check.json().items() if key != "status" or value == "unrecognised"}


def snapshot_entry(p: SnapshotPage) -> dict[str, Any]:
    """One snapshot: what it is, its first tensor's values and source, its verdicts, its tensors and figures."""
    traced = p.provenance  # read from a script's markers: it may not have been reached
    captured = traced is not None
    main = p.main if p.captured else None
    values = main if main and not main.absent else None  # a value with no copy has no shape, dtype nor values here
    entry = {
        "number": p.snap.number,
        "label": p.label,
        "title": p.snap.title,
        "variable": p.variable,
        "stage": p.snap.stage,
        "page": p.path,
        **({"captured": p.captured} if captured else {}),
        "shape": list(values.shown.shape) if values else None,
        "expected_shape": list(p.named_shape),
        "dtype": values.shown.dtype if values else None,
        "first": [json_number(v) for v in values.shown.first(16)] if values else [],
        "stats": {k: json_number(v) for k, v in values.shown.stats.items()} if values else {},
        **({"layout": {"status": traced.layout.status.value, "note": traced.layout.note}}
           if traced is not None and traced.layout is not None and main else {}),
        "source": _source(main) if main else None,
        "check": check_entry(p.check),
        **({"checks": [c.json() for c in p.checks]} if len(p.checks) > 1 else {}),
        "tensors": [{"name": t.name, **({"variable": t.variable} if captured else {}),
                     "shape": None if t.absent else list(t.shown.shape),
                     "source": {"path": t.source.path, "line": t.source.line}} for t in (p.tensors if main else ())],
        "figures": [f["file"] for f in p.figures],
    }
    return entry


def _source(t: TensorSection) -> dict[str, Any]:
    marker = {"marker_line": t.marker_line} if t.marker_line is not None else {}
    location = {"location": t.marked_at} if t.source.at else {}  # a notebook's cell and line
    return {"path": t.source.path, "line": t.source.line, **marker, **location}
