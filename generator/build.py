"""Generate reports: run the models, then write pages, figures and JSON, then swap them in."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.catalogue import REPORTS, Report
from generator.figures import draw
from generator.progress import Progress
from generator.render import render_landing, render_report
from generator.run import ModelRun
from generator.site import staged_output

log = logging.getLogger("generator")


@dataclass
class BuildResult:
    docs: Path
    reports: list[str]
    failed_checks: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def build(docs: Path, runners: dict[str, Callable[[Report], ModelRun]], progress: Progress) -> BuildResult:
    """Run every requested model first (bad input fails before anything is written), then write."""
    result = BuildResult(docs=docs, reports=list(runners))
    runs: dict[str, ModelRun] = {}
    for key, runner in runners.items():
        started = time.perf_counter()
        progress.status(f"running the {REPORTS[key].short_title} forward pass")
        runs[key] = runner(REPORTS[key])
        result.timings[f"{key}: forward pass"] = time.perf_counter() - started
        log.info("%s: forward pass on %s recorded %d tensors in %.2f s", key, runs[key].device, len(runs[key].recording), result.timings[f"{key}: forward pass"])

    with staged_output(docs, entries=[*runs, "index.md"]) as staging:
        for key, run in runs.items():
            report = REPORTS[key]
            out = staging / key
            (out / "figures").mkdir(parents=True)
            started = time.perf_counter()
            pages = render_report(report, run, out)
            result.timings[f"{key}: pages"] = time.perf_counter() - started
            log.info("%s: %d pages, %d checks passed, in %.2f s", key, len(pages), sum(p.check.passed for p in pages), result.timings[f"{key}: pages"])
            result.failed_checks += [f"{key} {p.label}: {p.check.name}" for p in pages if not p.check.passed]
            started = time.perf_counter()
            for fig in progress.iterate(report.figures, f"{report.short_title} figures"):
                draw(run, fig.kind, {k: run.name(v) if isinstance(v, str) else v for k, v in fig.args.items()}, out / "figures" / f"{fig.id}.png")
            result.timings[f"{key}: figures"] = time.perf_counter() - started
            log.info("%s: %d figures in %.2f s", key, len(report.figures), result.timings[f"{key}: figures"])
        render_landing(staging, landing_entries(docs, staging, runs))
        log.info("swapping the new output into %s", docs)
    for failure in result.failed_checks:
        log.warning("check failed: %s", failure)
    return result


def landing_entries(docs: Path, staging: Path, runs: dict[str, ModelRun]) -> list[dict[str, Any]]:
    """Both reports for the landing page: fresh ones from staging, the others as they are in docs/."""
    entries = []
    for key, report in REPORTS.items():
        folder = staging if key in runs else docs
        try:
            data = json.loads((folder / key / "snapshots.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        entries.append({
            "key": key,
            "title": report.title,
            "summary": data.get("summary", ""),
            "facts": data.get("facts", []),
            "count": len(data["snapshots"]),
            "passed": sum(1 for s in data["snapshots"] if s["check"]["passed"]),
        })
    return entries
