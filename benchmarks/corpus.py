"""Tracing overhead on the corpus of real implementations (tests/trace_corpus/<entry>/trace_driver*.py).

Each driver is measured in a new process of its own (entries reuse module names: `model`, `vit_pytorch`, `einops`):
    python benchmarks/corpus.py DRIVER REPEATS     # prints {"plain": [[wall, cpu], ...], "traced": [...]}
There, after the interpreter has started and imported PyTorch (and NumPy), the driver is run `repeats` times plainly
(as `python driver.py` runs it: `runpy`, its folder first on sys.path, argv) and under the tracer of the script's own
interpreter (generator/trace/bootstrap.py's Tracer, with the markers as the `trace` command sends them: what the
checks read of each line copied), interleaved. Before each run the entry's own modules are forgotten, so each run
imports them again as a new process would (their bytecode cached), and the garbage collector has run. Wall and CPU
seconds per run (time.thread_time: the script's main thread, where its Python and the tracer run; PyTorch's own worker
threads are left out, as they spin idle after parallel work on a busy machine); the minimum of each is what the page
reports, the machine being shared.
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


def drivers() -> list[Path]:
    return sorted(CORPUS.glob("*/trace_driver*.py"))


def driver_name(driver: Path) -> str:
    return f"{driver.parent.name}/{driver.name}"


def _forget_own_modules(folder: str) -> None:
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if file.startswith(folder + os.sep):
            del sys.modules[name]


def measure_in_this_process(driver: Path, repeats: int) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds of each plain and each traced run of ``driver``, interleaved (see the module's doc)."""
    import runpy

    import numpy  # noqa: F401 - imported once, as torch is: not the driver's cost
    import torch  # noqa: F401

    from transformer_trace.reports import REPORTS
    from transformer_trace.trace import as_traced, bootstrap, choose_numbering, numberings
    from transformer_trace.trace.capture import CAPTURE_BUDGET_BYTES, marker_spec, user_files
    from transformer_trace.trace.markers import scan

    folder = str(driver.parent)
    found = scan(user_files(driver), numberings(REPORTS))
    found, reads = as_traced(found, choose_numbering("auto", found, driver, REPORTS), REPORTS)
    markers = [marker_spec(m, **reads) for m in found]  # what `trace` sends the script's interpreter
    work = tempfile.mkdtemp(prefix="bench-corpus-")
    sys.path.insert(0, folder)

    def run(traced: bool) -> tuple[float, float]:
        _forget_own_modules(folder)
        saved = sys.argv[:]
        sys.argv = [str(driver)]
        tracer = bootstrap.Tracer({"script": str(driver), "markers": markers},
                                  bootstrap.Results(work, CAPTURE_BUDGET_BYTES)) if traced else None
        gc.collect()
        wall, cpu = time.perf_counter(), time.thread_time()
        if tracer:
            sys.settrace(tracer.global_trace)
        try:
            runpy.run_path(str(driver), run_name="__main__")
        finally:
            sys.settrace(None)
            sys.argv = saved
        return time.perf_counter() - wall, time.thread_time() - cpu

    times: dict[str, list[tuple[float, float]]] = {"plain": [], "traced": []}
    with contextlib.redirect_stdout(io.StringIO()):
        run(False), run(True)  # bytecode written, caches warm
        for _ in range(repeats):
            times["plain"].append(run(False))
            times["traced"].append(run(True))
    return times


def bench_corpus(repeats: int) -> list[tuple[str, float, float, float, float]]:
    """Per driver: (name, plain wall, traced wall, plain CPU, traced CPU), each the minimum over ``repeats`` runs."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    rows = []
    for driver in drivers():
        result = subprocess.run([sys.executable, __file__, str(driver), str(repeats)], capture_output=True, text=True,
                                env=env, check=True)
        times = json.loads(result.stdout.splitlines()[-1])
        plain, traced = times["plain"], times["traced"]
        rows.append((driver_name(driver), min(w for w, _ in plain), min(w for w, _ in traced),
                     min(c for _, c in plain), min(c for _, c in traced)))
    return rows


def corpus_section(rows: list[tuple[str, float, float, float, float]]) -> list[str]:
    lines = ["## Tracing real implementations (the corpus)", "",
             "Each driver of tests/trace_corpus/ (a public implementation with only markers added, and a small driver "
             "of ours that builds it at a tiny size with random weights and runs one forward pass), in a new process "
             "of its own: once the interpreter has started and imported PyTorch and NumPy (neither is counted), the "
             "driver runs as `python driver.py` would (`runpy`, its own modules imported afresh each run, their "
             "bytecode cached) and under the tracer of the script's own interpreter (generator/trace/bootstrap.py), "
             "interleaved; the minimum of the repeats, in wall-clock seconds and in CPU seconds of the script's "
             f"thread (the column judged against {LIMIT}×: the machine is shared, and CPU time is what the tracer "
             "adds whatever else runs).", "",
             f"| driver | plain run | traced run | overhead (wall) | plain CPU | traced CPU | overhead (CPU) | "
             f"≤ {LIMIT}×? |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for name, plain, traced, plain_cpu, traced_cpu in rows:
        wall_ratio, cpu_ratio = traced / plain, traced_cpu / plain_cpu
        lines.append(f"| `{name}` | {plain * 1000:.1f} ms | {traced * 1000:.1f} ms | {wall_ratio:.2f}× | "
                     f"{plain_cpu * 1000:.1f} ms | {traced_cpu * 1000:.1f} ms | {cpu_ratio:.2f}× | "
                     f"{'yes' if cpu_ratio <= LIMIT else 'no'} |")
    return lines + [""]


if __name__ == "__main__":
    measured = measure_in_this_process(Path(sys.argv[1]).resolve(), int(sys.argv[2]))
    print(json.dumps(measured))
