"""The work the tracer adds to each corpus driver, counted rather than timed (issue 39 point 6: the corpus overhead not
worse than the baseline's), side by side with the baseline:

    .venv/bin/python benchmarks/run.py --baseline c36410f --only corpus-work

Timings of these few-millisecond runs move by more than the 10 % a verdict needs on a shared machine (one plain run of
the same code took 6 ms in one process and 16 ms in the next); counts do not. Per driver, one traced run minus one plain
run of the same process, both after a first run of each (bytecode written, caches warm), as benchmarks/corpus.py runs
them: the Python function calls made (cProfile), the PyTorch operators the tracer's own files dispatched and the
elements they produced (a TorchDispatchMode: its clones and statistics), the bytes of array data the child copied while
the script ran, and those it kept for the parent (with the tensors it holds by reference, read once the script ended).
Each checkout is counted by this file run with its own interpreter from its own root, on its own drivers, so the same
instrument reads both; it uses only what both commits' tracers share (bootstrap.Tracer, Results, marker_spec).

    python benchmarks/corpus_work.py DRIVER   # from a checkout's root: one JSON line of counts
"""

from __future__ import annotations

import collections
import contextlib
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

COUNTS = ("python calls", "torch ops", "elements produced", "bytes copied", "bytes kept")
MORE_BY = 0.10  # a driver does more work where a count grew by over this share (and by over WORK_FLOOR of it)
WORK_FLOOR = {"python calls": 100, "torch ops": 5, "elements produced": 1000, "bytes copied": 4096, "bytes kept": 4096}


def count_driver(driver: Path) -> dict[str, int]:
    """One traced run of ``driver`` minus one plain run, counted (see the module's doc)."""
    import torch

    torch.set_num_threads(1)
    sys.dont_write_bytecode, sys.pycache_prefix = False, tempfile.mkdtemp(prefix="bench-work-pycache-")
    run = _runner(driver)
    ours = set(sys.modules)  # what the drivers import beyond it is theirs
    calls = {}
    with contextlib.redirect_stdout(io.StringIO()):
        run("plain"), run("traced")  # bytecode written, caches warm
        for kind in ("plain", "traced"):
            profile = cProfile.Profile()
            with _profiling(profile):
                run(kind)
            calls[kind] = sum(row[1] for row in pstats.Stats(profile).stats.values())
        _import_dynamo_beside(ours)
        ops = _tracer_ops(torch)
        tracer = run("traced", ops)
    arrays = [(described.get("nbytes", 0), type(copy).__name__)
              for _, kept in tracer.results.pending for described, copy in kept]  # type: ignore[attr-defined]
    return {"python calls": calls["traced"] - calls["plain"], "torch ops": ops.count,
            "elements produced": ops.elements,
            # a live reference (the tensor is not written to again) is read after the run: no copy while it runs
            "bytes copied": sum(size for size, kind in arrays if kind != "Live"),
            "bytes kept": sum(size for size, _ in arrays), "hits": tracer.results.order}  # type: ignore[attr-defined]


def _runner(driver: Path):  # type: ignore[no-untyped-def]
    """``run(kind, within)``: the driver run plainly or traced (as benchmarks/corpus.py runs it, the markers as the
    `trace` command sends them) inside the context manager ``within``; the traced run's Tracer, or None."""
    import runpy

    import numpy  # noqa: F401 - imported once, as benchmarks/corpus.py does

    sys.path.insert(0, os.getcwd())
    from benchmarks.corpus import _forget_own_modules, run_traced
    from transformer_trace.reports import REPORTS
    from transformer_trace.trace import as_traced, choose_numbering, numberings
    from transformer_trace.trace.child import bootstrap
    from transformer_trace.trace.markers import scan
    from transformer_trace.trace.reading.capture import CAPTURE_BUDGET_BYTES, marker_spec
    try:
        from transformer_trace.trace.reading.user_files import user_files
    except ImportError:  # the baseline kept it beside the capture
        from transformer_trace.trace.reading.capture import user_files  # type: ignore[attr-defined,no-redef]

    folder = str(driver.parent)
    found = scan(user_files(driver), numberings(REPORTS))
    found, reads = as_traced(found, choose_numbering("auto", found, driver, REPORTS), REPORTS)
    markers = [marker_spec(m, **reads) for m in found]
    work, compiled = tempfile.mkdtemp(prefix="bench-work-"), tempfile.mkdtemp(prefix="bench-work-instrumented-")
    sys.path.insert(0, folder)

    def run(kind: str, within: contextlib.AbstractContextManager = contextlib.nullcontext()) -> object:
        _forget_own_modules(folder)
        saved, sys.argv = sys.argv[:], [str(driver)]
        tracer = uninstall = None
        if kind == "traced":
            tracer = bootstrap.Tracer({"script": str(driver), "markers": markers, "cache": compiled},
                                      bootstrap.Results(work, CAPTURE_BUDGET_BYTES))
        with within:
            if tracer is not None:
                uninstall = tracer.install()
            try:
                if tracer is None:
                    runpy.run_path(str(driver), run_name="__main__")
                else:
                    run_traced(driver, tracer)
            finally:
                if uninstall is not None:
                    uninstall()
                sys.argv = saved
        return tracer

    return run


def _import_dynamo_beside(ours: set[str]) -> None:
    """A dispatch mode imports torch._dynamo at the first factory call, which looks up every imported module: a
    driver's stub (a module without a spec) would fail it, so it is imported here, the stubs set aside meanwhile."""
    stubs = {name: module for name, module in list(sys.modules.items())
             if name not in ours and getattr(module, "__spec__", 0) is None}
    for name in stubs:
        del sys.modules[name]
    import torch._dynamo  # noqa: F401
    sys.modules.update(stubs)


def _tracer_ops(torch):  # type: ignore[no-untyped-def]
    """A TorchDispatchMode counting the operators the tracer's own code dispatched and the elements they made: those
    whose first caller outside PyTorch is a file of the checkout's generator/ (transformer_trace), either commit's."""
    from torch.utils._python_dispatch import TorchDispatchMode

    tracer_code = os.path.join(os.getcwd(), "generator", "")
    torch_code = os.path.join(os.path.dirname(torch.__file__), "")

    class Ops(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.count = self.elements = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith(torch_code):
                frame = frame.f_back
            if frame is None or not frame.f_code.co_filename.startswith(tracer_code):
                return out  # the script's own operator (a driver may copy differently from one run to the next)
            self.count += 1
            self.elements += sum(o.numel() for o in (out if isinstance(out, (tuple, list)) else (out,))
                                 if isinstance(o, torch.Tensor))
            return out

    return Ops()


@contextlib.contextmanager
def _profiling(profile: cProfile.Profile):  # type: ignore[no-untyped-def]
    profile.enable()
    try:
        yield
    finally:
        profile.disable()


def count_checkout(python: Path, root: Path) -> dict[str, dict[str, int]]:
    """Every corpus driver of the checkout at ``root`` counted by its interpreter, each in a new process."""
    rows = {}
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    for driver in sorted((root / "tests" / "trace_corpus").glob("*/trace_driver*.py")):
        result = subprocess.run([str(python), __file__, str(driver)], cwd=root, env=env, capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"{driver}: counting failed: {result.stderr[-2000:]}")
        rows[f"{driver.parent.name}/{driver.name}"] = json.loads(result.stdout.splitlines()[-1])
    return rows


def more_work(base: dict[str, int], mine: dict[str, int]) -> list[str]:
    """The counts that grew by over MORE_BY (and WORK_FLOOR)."""
    return [name for name in COUNTS if mine[name] - base[name] > max(MORE_BY * base[name], WORK_FLOOR[name])]


def work_section(baseline_label: str, current_label: str, base: dict[str, dict[str, int]],
                 mine: dict[str, dict[str, int]]) -> str:
    lines = ["## Tracing work side by side (counted)", "",
             f"This commit ({current_label}) and the commit this work started from ({baseline_label}): what the tracer "
             "adds to one run of each corpus driver, counted, by `benchmarks/run.py --baseline --only corpus-work` "
             "(benchmarks/corpus_work.py): one traced run minus one plain run in one process, after a first run of "
             "each; Python function calls (cProfile), PyTorch operators the tracer's code dispatched and the elements "
             "they produced, the bytes of array data the child copied while the script ran, and those it kept for the "
             "report (with the tensors it holds by reference and reads once the script has ended). Counts do not move "
             "with the machine's load, as the timings above do; they say whether the tracer does more, not how long it "
             "takes.", "",
             "| corpus driver | hits | Python calls | torch ops | elements produced | bytes copied | bytes kept | "
             "more work? |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    grew = []
    for name in sorted(set(base) & set(mine)):
        b, m = base[name], mine[name]
        more = more_work(b, m)
        if more:
            grew.append(f"`{name}` ({', '.join(more)})")
        cells = " | ".join(f"{b[c]:,} → {m[c]:,}" for c in COUNTS)
        hits = f"{b['hits']} → {m['hits']}" if b["hits"] != m["hits"] else str(m["hits"])
        lines.append(f"| `{name}` | {hits} | {cells} | {'**yes**' if more else 'no'} |")
    lines += ["", (f"More work (a count over {MORE_BY:.0%} higher) for {len(grew)} of {len(set(base) & set(mine))} "
                   f"drivers: {'; '.join(grew)}.") if grew else
              f"No driver does more work (no count over {MORE_BY:.0%} higher) than on the baseline.", ""]
    return "\n".join(lines) + "\n"


def compare_work(baseline: str, baseline_python: Path | None, root: Path) -> str:
    """The page's section: this checkout (``root``, the running interpreter) and ``baseline`` (a commit or a folder:
    benchmarks/checkout.py) counted in turn."""
    from benchmarks.checkout import BaselineCheckout, Checkout

    current = Checkout.at(root, Path(sys.executable))
    with BaselineCheckout(baseline, baseline_python) as base:
        counted = [count_checkout(checkout.python, checkout.root) for checkout in (base, current)]
        return work_section(base.label, current.label, *counted)


if __name__ == "__main__":
    print(json.dumps(count_driver(Path(sys.argv[1]).resolve())))
