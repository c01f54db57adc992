"""Tracing overhead on the corpus of real implementations (tests/trace_corpus/<entry>/trace_driver*.py).

Each driver is measured in a new process of its own (entries reuse module names: `model`, `vit_pytorch`, `einops`):
    python benchmarks/corpus.py DRIVER REPEATS  # prints {"plain": [[wall, cpu], ...], "traced": [...], "idle": [...],
                                                #         "hits": [per traced run]}
There, after the interpreter has started and imported PyTorch (and NumPy), the driver is run `repeats` times plainly
(as `python driver.py` runs it: `runpy`, its folder first on sys.path, argv), under the tracer of the script's own
interpreter (generator/trace/child/bootstrap.py's Tracer installed, the driver and its marked modules compiled with its
calls, with the markers as the `trace` command sends them: what the checks read of each line copied) and under a
trace function that does nothing, interleaved. Before each run the entry's own modules are forgotten, so each run
imports them again as a new process would (their bytecode cached), and the garbage collector has run. Wall and CPU
seconds per run (time.thread_time: the script's main thread, where its Python and the tracer run, with PyTorch held to
that one thread: its worker threads spin idle after parallel work on a busy machine, and the main thread spun waiting
for them); the minimum of each is what the page reports, the machine being shared.
`python benchmarks/run.py --only corpus [--quick]` replaces its section of docs/benchmarks.md.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "trace_corpus"
LIMIT = 1.5  # issue 29 point 7: traced ≤ 1.5× the script's own run
KINDS = ("plain", "traced", "idle")  # idle: under a trace function that does nothing


def drivers() -> list[Path]:
    return sorted(CORPUS.glob("*/trace_driver*.py"))


def driver_name(driver: Path) -> str:
    return f"{driver.parent.name}/{driver.name}"


def _forget_own_modules(folder: str) -> None:
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if file.startswith(folder + os.sep):
            del sys.modules[name]


def measure_in_this_process(driver: Path, repeats: int) -> dict[str, list]:
    """(wall, CPU) seconds of each plain and each traced run of ``driver``, interleaved (see the module's doc), and
    the hits each traced run captured ("hits")."""
    import runpy

    import numpy  # noqa: F401 - imported once, as torch is: not the driver's cost
    import torch

    # PyTorch computes on the script's thread alone: its CPU time is then the run's work; with worker threads on a busy
    # machine it also counted the thread spinning for workers that got no core (one plain run 11 ms, the next 100 ms)
    torch.set_num_threads(1)

    from transformer_trace.reports import REPORTS
    from transformer_trace.trace import as_traced, choose_numbering, numberings
    from transformer_trace.trace.child import bootstrap
    from transformer_trace.trace.reading.capture import CAPTURE_BUDGET_BYTES, marker_spec
    from transformer_trace.trace.reading.user_files import user_files
    from transformer_trace.trace.markers import scan

    # the entry's modules are imported from cached bytecode, as `python driver.py` imports them once it has run before
    # (here even where PYTHONDONTWRITEBYTECODE is set), from a folder of its own: nothing is written beside them
    sys.dont_write_bytecode, sys.pycache_prefix = False, tempfile.mkdtemp(prefix="bench-corpus-pycache-")
    folder = str(driver.parent)
    found = scan(user_files(driver), numberings(REPORTS))
    found, reads = as_traced(found, choose_numbering("auto", found, driver, REPORTS), REPORTS)
    markers = [marker_spec(m, **reads) for m in found]  # what `trace` sends the script's interpreter
    work = tempfile.mkdtemp(prefix="bench-corpus-")
    compiled = tempfile.mkdtemp(prefix="bench-corpus-instrumented-")  # as `trace` keeps the marked files' code
    sys.path.insert(0, folder)

    def run(kind: str) -> tuple[float, float]:
        _forget_own_modules(folder)
        saved = sys.argv[:]
        sys.argv = [str(driver)]
        tracer = uninstall = None
        if kind == "traced":
            tracer = bootstrap.Tracer({"script": str(driver), "markers": markers, "cache": compiled},
                                      bootstrap.Results(work, CAPTURE_BUDGET_BYTES))
        gc.collect()
        wall, cpu = time.perf_counter(), time.thread_time()
        if tracer is not None:  # as the script's interpreter runs it: the marked files compiled with their calls
            uninstall = tracer.install()
        elif kind == "idle":
            sys.settrace(_do_nothing)
        try:
            if tracer is None:
                runpy.run_path(str(driver), run_name="__main__")
            else:
                run_traced(driver, tracer)
        finally:
            sys.settrace(None)
            if uninstall is not None:
                uninstall()
            sys.argv = saved
        elapsed = time.perf_counter() - wall, time.thread_time() - cpu
        if tracer is not None:  # a traced run that captured nothing would be timed for nothing
            hits.append(tracer.results.order)
        return elapsed

    hits: list[int] = []  # per traced run: the hits it captured
    times: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
    with contextlib.redirect_stdout(io.StringIO()):
        run("plain"), run("traced")  # bytecode written, caches warm
        for _ in range(repeats):
            for kind in KINDS:
                times[kind].append(run(kind))
    return {**times, "hits": hits}


def run_traced(driver: Path, tracer: object) -> None:
    """The driver as runpy.run_path runs it (a fresh `__main__` namespace, compiled from its source), its marked
    statements wrapped as the script's interpreter compiles them."""
    main = sys.modules["__main__"]
    module = type(sys)("__main__")
    module.__file__ = str(driver)
    sys.modules["__main__"] = module
    try:
        exec(tracer.script_code(str(driver), driver.read_bytes(), module.__dict__), module.__dict__)
    finally:
        sys.modules["__main__"] = main


def _do_nothing(frame: object, event: str, arg: object) -> None:
    """A trace function that traces nothing: what Python's own tracing mode costs, the least any tracer can."""


Row = tuple[str, float, float, float, float, float]


def bench_corpus(repeats: int) -> list[Row]:
    """Per driver: (name, plain wall, traced wall, plain CPU, traced CPU, CPU under a do-nothing trace function), each
    the minimum over ``repeats`` runs."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    rows = []
    for driver in drivers():
        result = subprocess.run([sys.executable, __file__, str(driver), str(repeats)], capture_output=True, text=True,
                                env=env, check=True)
        times = json.loads(result.stdout.splitlines()[-1])
        plain, traced, idle = times["plain"], times["traced"], times["idle"]
        if not times["hits"] or min(times["hits"]) == 0 or len(set(times["hits"])) > 1:
            raise RuntimeError(f"{driver_name(driver)}: the traced runs captured {times['hits']} hits")
        rows.append((driver_name(driver), min(w for w, _ in plain), min(w for w, _ in traced),
                     min(c for _, c in plain), min(c for _, c in traced), min(c for _, c in idle)))
    return rows


def corpus_section(rows: list[Row]) -> list[str]:
    lines = ["## Tracing real implementations (the corpus)", "",
             "Each driver of tests/trace_corpus/ (a public implementation with only markers added, and a small driver "
             "of ours that builds it at a tiny size with random weights and runs one forward pass), in a new process "
             "of its own: once the interpreter has started and imported PyTorch and NumPy (neither is counted), the "
             "driver runs as `python driver.py` would (`runpy`, its own modules imported afresh each run, their "
             "bytecode cached), under the tracer of the script's own interpreter (generator/trace/child/bootstrap.py: "
             "the marked files compiled with a call to the tracer around each marked statement, instrument.py, read "
             "back from its cache after the first run as Python reads cached bytecode; the markers as the `trace` "
             "command sends them: only the module calls and local tensors the checks of each line read are copied; "
             "every traced run must capture the same, non-zero number of hits), and, for comparison, under a trace "
             "function that does nothing (what Python 3.11's tracing mode costs by itself: the least any "
             "sys.settrace tracer costs, as this command's did before it compiled the calls in), interleaved; the "
             "minimum of the repeats, in wall-clock seconds and in CPU seconds of the script's thread (PyTorch held to "
             "that one thread, which otherwise spins waiting for its workers on a busy machine; the column "
             f"judged against {LIMIT}×: the machine is shared, and CPU time is what the tracer adds whatever else "
             "runs).", "",
             f"| driver | plain run | traced run | overhead (wall) | plain CPU | traced CPU | overhead (CPU) | "
             f"≤ {LIMIT}×? | do-nothing trace function (CPU) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for name, plain, traced, plain_cpu, traced_cpu, idle_cpu in rows:
        wall_ratio, cpu_ratio = traced / plain, traced_cpu / plain_cpu
        lines.append(f"| `{name}` | {plain * 1000:.1f} ms | {traced * 1000:.1f} ms | {wall_ratio:.2f}× | "
                     f"{plain_cpu * 1000:.1f} ms | {traced_cpu * 1000:.1f} ms | {cpu_ratio:.2f}× | "
                     f"{'yes' if cpu_ratio <= LIMIT else 'no'} | {idle_cpu / plain_cpu:.2f}× |")
    met = sum(traced_cpu / plain_cpu <= LIMIT for *_, plain_cpu, traced_cpu, _ in rows)
    floor = [idle / plain_cpu for *_, plain_cpu, _, idle in rows]
    verb = "is" if met == 1 else "are"
    ratios = [traced_cpu / plain_cpu for *_, plain_cpu, traced_cpu, _ in rows]
    lines += ["", f"{met} of {len(rows)} drivers {verb} traced within {LIMIT}× of their own run (CPU): "
              f"{min(ratios):.2f}×–{max(ratios):.2f}×. No trace function runs: what the tracer adds is its work at "
              "the marked statements (reading the values, copying them and the module calls their checks read), "
              "which weighs most on these tiny models' few-millisecond runs. A trace function that returns at once "
              f"would cost {min(floor):.2f}×–{max(floor):.2f}× by itself: while sys.settrace is on, all Python code "
              "(PyTorch's own included) runs in the interpreter's slower tracing mode."] if rows else []
    return lines + [""]


if __name__ == "__main__":
    measured = measure_in_this_process(Path(sys.argv[1]).resolve(), int(sys.argv[2]))
    print(json.dumps(measured))
