"""Generate reports: run the models, then write pages, figures and JSON, then swap them in."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from transformer_trace.catalogue import Report
from transformer_trace.errors import about_report
from transformer_trace.figures import Drawing
from transformer_trace.landing import landing_entries, landing_is_ours, pdf_is_current, write_landing
from transformer_trace.options import RunOptions
from transformer_trace.processes import die_with_parent, signals_held_over_fork
from transformer_trace.progress import Progress
from transformer_trace.render import environment, render_report
from transformer_trace.text import not_drawable
from transformer_trace.run import ModelRun
from transformer_trace.sources import NotCheckable
from transformer_trace.template_cache import compile_ahead
from transformer_trace.docs_folder.staging import build_lock, edited_by_hand, staged_output
from transformer_trace.tensor_data import write_run_data

log = logging.getLogger("transformer_trace")


@dataclass
class BuildResult:
    docs: Path
    reports: list[str]
    failed_checks: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    figures_drawn: dict[str, int] = field(default_factory=dict)


def build(docs: Path, requests: dict[str, RunOptions], progress: Progress, force: bool = False,
          records: dict[str, dict[str, Any]] | None = None, *, reports: Mapping[str, Report]) -> BuildResult:
    """Run every requested report's model first (bad input fails before anything is written), then write.

    ``requests`` maps report keys to their options; ``reports`` holds the Report of each key (the registry's, from the
    CLI or the MkDocs plugin), in site order; ``force`` overwrites generated files edited by hand (without it the build
    refuses and names them); ``records`` is what the manifest keeps about each report
    (generator/docs_folder/configured.py). The landing page (index.md) is written unless the docs folder has an
    index.md or README.md of its own (a MkDocs site that adds the reports to its own pages).
    """
    missing = [key for key in requests if key not in reports]
    if missing:
        raise KeyError(f"no report named {', '.join(missing)}; known: {', '.join(reports) or 'none'}")
    requested = {key: reports[key] for key in requests}
    end_compiling = compile_ahead(environment(*requested.values()))  # on a fresh clone, compiled beside the runs
    try:
        return _build(docs, requests, progress, force, records, reports)
    finally:
        end_compiling()


def _build(docs: Path, requests: dict[str, RunOptions], progress: Progress, force: bool,
           records: dict[str, dict[str, Any]] | None, reports: Mapping[str, Report]) -> BuildResult:
    result = BuildResult(docs=docs, reports=list(requests))
    runs: dict[str, ModelRun] = {}
    # measured beside the runs (the GPT's held-out score)
    begun = [reports[key].start(opts) for key, opts in requests.items()]
    try:
        for key, opts in requests.items():
            started = time.perf_counter()
            progress.status(f"running the {reports[key].short_title} forward pass")
            with about_report(key):  # an input found bad only now (an image, a weights file) names its report
                runs[key] = reports[key].run(opts, finish=False)
            result.timings[f"{key}: forward pass"] = time.perf_counter() - started
            log.info("%s: forward pass on %s recorded %d tensors in %.2f s", key, runs[key].device,
                     len(runs[key].recording), result.timings[f"{key}: forward pass"])

        landing = landing_is_ours(docs)
        with staged_output(docs, entries=[*runs, *(["index.md"] if landing else [])], force=force,
                           records=records) as staging:
            failed: dict[str, list[str]] = {}
            # Every report's pages, then every report's figures: a run still finishing work begun ahead (the GPT's
            # held-out score, in a thread) writes its pages last, and no figure worker is forked while that thread runs.
            for key in sorted(runs, key=lambda k: bool(runs[k].unfinished)):
                run, report = runs[key].finish(), reports[key]
                out = staging / key
                (out / "figures").mkdir(parents=True)
                started = time.perf_counter()
                with about_report(key):
                    pages = render_report(report, run, out, order=list(reports).index(key))
                    # out/data/*.npy + index.json: every number, for the explorer and numpy
                    write_run_data(report, run, pages, out)
                result.timings[f"{key}: pages"] = time.perf_counter() - started
                log.info("%s: %d pages, %d checks passed, in %.2f s", key, len(pages),
                         sum(p.check.passed for p in pages), result.timings[f"{key}: pages"])
                failed[key] = [f"{key} {p.label}: {p.check.name}" + ("" if p.check.checkable else " (not checkable)")
                               for p in pages if not p.check.passed]
            for wait in begun:
                wait()
            # Every report's figures in one pool of workers, forked once: a fork copies this whole process (the
            # models and their weights), and the reports are drawn one after another as before.
            planned, planning = {}, {}
            for key, run in runs.items():
                started = time.perf_counter()
                with about_report(key):
                    planned[key] = plan_figures([(fig.id, fig.drawing) for fig in reports[key].figures], run,
                                                staging / key / "figures", docs / key / "figures")
                planning[key] = time.perf_counter() - started
            with FigureWorkers([job for plan in planned.values() for job in plan.jobs]) as workers:
                for key, run in runs.items():
                    report, plan = reports[key], planned[key]
                    result.failed_checks += failed[key]
                    started = time.perf_counter()
                    with about_report(key):
                        drawn = len(plan.jobs) - len(workers.draw(plan.jobs, progress, report.short_title))
                        plan.write_keys()
                    result.timings[f"{key}: figures"] = planning[key] + time.perf_counter() - started
                    result.figures_drawn[key] = drawn
                    log.info("%s: %d of %d figures drawn (the others unchanged) in %.2f s", key, drawn,
                             len(report.figures), result.timings[f"{key}: figures"])
            if landing:
                write_landing(staging, landing_entries(docs, staging, set(runs), reports), reports)
            log.info("swapping the new output into %s", docs)
    finally:
        for wait in begun:  # nothing begun ahead runs on once the build has ended
            wait()
    with build_lock(docs):  # not while a PDF export writes docs/pdf/
        for key in runs:  # a PDF printed from a different report no longer matches it (same inputs: same report, kept)
            if not pdf_is_current(docs, key, docs / key):
                (docs / "pdf" / f"{key}.pdf").unlink(missing_ok=True)
    for failure in result.failed_checks:
        log.warning("check failed: %s", failure)
    return result


FIGURE_INDEX = "index.json"  # figure id -> content key, to skip unchanged figures next time
_JOBS: list[tuple[ModelRun, Drawing, Path]] = []  # read by forked workers


def _draw_job(index: int) -> BaseException | None:
    run, drawing, path = _JOBS[index]
    try:
        drawing.draw(run, path)
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which re-raises it (Ctrl-C included)
        return exc
    return None


def _worker_init(parent: int) -> None:
    """A figure worker dies with the process that forked it, however that one ends (SIGKILL included)."""
    die_with_parent(parent)
    import torch

    torch.set_num_threads(1)  # one figure per core; no oversubscription


@dataclass
class FigurePlan:
    """The figures one build draws into ``out``: ``jobs`` (run, drawing, target), those whose content key changed or
    that were never drawn; the others are already copied from ``previous``. ``keys``: each figure's content key."""

    out: Path
    previous: Path | None
    jobs: list[tuple[ModelRun, Drawing, Path]]
    keys: dict[str, str]

    def write_keys(self) -> None:
        if self.previous is not None:
            (self.out / FIGURE_INDEX).write_text(json.dumps(self.keys, indent=1, sort_keys=True) + "\n",
                                                 encoding="utf-8")


def plan_figures(figures: list[tuple[str, Drawing]], run: ModelRun, out: Path, previous: Path | None) -> FigurePlan:
    """Which of ``figures`` (id, drawing) to draw into ``out/<id>.png``; with ``previous`` (the figures folder of the
    last build), a figure whose content key is unchanged is copied from there now instead."""
    try:
        old_keys = json.loads((previous / FIGURE_INDEX).read_text(encoding="utf-8")) if previous is not None else {}
    except (OSError, ValueError):
        old_keys = {}
    keys, jobs = {}, []
    for fid, drawing in figures:
        target = out / f"{fid}.png"
        if previous is not None:
            keys[fid] = drawing.content_key(run)
            if (old_keys.get(fid) == keys[fid] and (previous / target.name).is_file()
                    and not edited_by_hand(previous / target.name, previous / FIGURE_INDEX)):
                shutil.copyfile(previous / target.name, target)
                continue
        jobs.append((run, drawing, target))
    return FigurePlan(out, previous, jobs, keys)


class FigureWorkers:
    """One worker process per core (at most one per job), forked once for every job given and drawing them in any
    batches ``draw`` is asked for; with fewer than two jobs or one core, no process: ``draw`` draws in this one."""

    def __init__(self, jobs: list[tuple[ModelRun, Drawing, Path]], parallel: bool = True) -> None:
        self.jobs = jobs
        self.count = min(len(jobs), os.cpu_count() or 1) if parallel else 1
        self.pool: ProcessPoolExecutor | None = None
        self.forks = 0  # how many worker processes were started (the tests count them)

    def __enter__(self) -> FigureWorkers:
        if self.count > 1:
            _JOBS[:] = self.jobs  # the workers inherit the runs: nothing is pickled
            context = multiprocessing.get_context("fork")
            self.pool = ProcessPoolExecutor(self.count, mp_context=context, initializer=_worker_init,
                                            initargs=(os.getpid(),))
            self.forks = self.count
        return self

    def __exit__(self, kind, *exc_info) -> None:
        try:
            if self.pool is not None:
                if kind is not None:  # Ctrl-C or an error: the drawings in flight are not waited for
                    self._stop_workers()
                self.pool.shutdown(wait=True, cancel_futures=True)
        finally:
            _JOBS.clear()

    def _stop_workers(self) -> None:
        """Kill the worker processes now: a regeneration stopped by Ctrl-C must not wait while a loaded machine
        draws the figures already handed out (the serve process must exit within seconds)."""
        processes = getattr(self.pool, "_processes", None) or {}
        for process in list(processes.values()):
            if process.is_alive():
                process.kill()

    def draw(self, jobs: list[tuple[ModelRun, Drawing, Path]], progress: Progress,
             label: str) -> dict[str, NotCheckable]:
        """Draw ``jobs`` (some of those given at the start), returning once all are drawn; a drawing's error is
        raised here. Drawn in this process: what each figure of a run without a model lacked (id -> why)."""
        lacked: dict[str, NotCheckable] = {}
        if self.pool is None:
            for job_run, drawing, target in progress.iterate(jobs, f"{label} figures"):
                if (lack := _draw(job_run, drawing, target)) is not None:
                    lacked[target.stem] = lack
            return lacked
        position = {id(job): i for i, job in enumerate(self.jobs)}
        with signals_held_over_fork():  # the first submit forks the workers
            futures = [self.pool.submit(_draw_job, position[id(job)]) for job in jobs]
        for future in progress.iterate(as_completed(futures), f"{label} figures", total=len(futures)):
            if (error := future.result()) is not None:
                raise error
        return lacked


def draw_all(figures: list[tuple[str, Drawing]], run: ModelRun, out: Path, previous: Path | None, progress: Progress,
             label: str, parallel: bool = True) -> tuple[int, dict[str, NotCheckable]]:
    """The one figure drawer for one run: draw each (id, drawing) into ``out/<id>.png``; with ``previous`` (the
    figures folder of the last build), copy a figure whose content key is unchanged and write the keys; ``parallel``:
    one process per core (a traced script's run is drawn in its own process). Returns how many were drawn and, for a
    run without a model (a traced script's), the figures not drawn: id -> what the drawing needed that the run lacks."""
    plan = plan_figures(figures, run, out, previous)
    with FigureWorkers(plan.jobs, parallel) as workers:
        lacked = workers.draw(plan.jobs, progress, label)
    plan.write_keys()
    return len(plan.jobs) - len(lacked), lacked


def _draw(run: ModelRun, drawing: Drawing, target: Path) -> NotCheckable | None:
    """Draw one figure; for a run without a model, what it lacks (a tensor it declares: which snapshot) stops it."""
    try:
        for ref in drawing.inputs():
            run.cpu(ref)
        drawing.draw(run, target)
    except NotCheckable as lack:
        if run.model is not None:  # a model run has everything its figures read: a bug, raised
            raise
        target.unlink(missing_ok=True)
        return lack
    except Exception as exc:  # noqa: BLE001 - a drawing made for a model's values, given a script's: the page says so
        if run.model is not None:
            raise
        target.unlink(missing_ok=True)
        return NotCheckable("values this drawing can show", not_drawable(exc))
    return None

