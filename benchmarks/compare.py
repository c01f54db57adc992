"""This checkout's regeneration and trace figures beside another checkout's (the commit this work started from),
measured in the same run, with a fixed pure-Python yardstick that turns seconds into machine-independent multiples.

    .venv/bin/python benchmarks/run.py --baseline c36410f      # replaces its section of docs/benchmarks.md

A commit is checked out in a scratch worktree with an interpreter that imports its sources and this interpreter's
libraries (benchmarks/checkout.py), removed afterwards; a folder is used as it is, with ``FOLDER/.venv/bin/python``
unless ``--baseline-python`` says otherwise. Each checkout is measured with its own code (its benchmarks/run.py
functions, in its own interpreter), in rounds that alternate which checkout goes first, so drift in the machine's load
falls on both alike; the load average is sampled all through the run and printed on the page.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.checkout import Checkout
from benchmarks.measure import build_steps

# Fixed work, never tuned to the machine: a modular sum over a million integers in plain Python (about half a second
# on the 2-core x86_64 machine the page is measured on). Times divided by it compare across machines and days.
YARDSTICK = """
import time
started = time.perf_counter()
total = 0
for i in range(1_000_000):
    total = (total + i * i) % 1_000_003
print(time.perf_counter() - started)
"""

# The goals the issue sets for the two figures that matter most to a user, as multiples of the yardstick.
COLD_GOAL, WARM_GOAL = 7.0, 0.7

# A figure is called slower when it took this much longer (relative) and at least SLOWER_FLOOR seconds longer:
# repeats on a shared machine differ by about this much, and the steps' logged times are rounded to 10 ms.
SLOWER_BY, SLOWER_FLOOR = 0.10, 0.005

# Run in a checkout's own interpreter, from its root, to a JSON file: every report from scratch twice (the first on
# an empty cache, as a fresh clone; the second, as the page's "cold build", reading back what the first measured),
# `mkdocs build`, both again with the same inputs, the imports, with its own benchmarks/measure.py; then its own
# benchmarks/run.py's warm regeneration and trace measurements, one repeat each, and the corpus drivers' tracing
# overhead (each driver by its own benchmarks/corpus.py, the repeats CORPUS_MEASURE passes), both on one intra-op
# thread (ONE_INTRA_OP_THREAD). The from-scratch build's verbose log
# goes back whole: this checkout reads its steps (``flatten``), so both sides are read by one parser, whatever the other
# checkout's benchmarks/measure.py makes of a log.
DRIVER = """
import json, os, shutil, sys, tempfile
from pathlib import Path
sys.path.insert(0, ".")
from benchmarks import run
from benchmarks.measure import import_seconds, run_timed, scratch_site

py, cache = sys.executable, tempfile.mkdtemp(prefix="bench-cache-")
env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "TT_CACHE_DIR": cache}
build = [py, "-m", "transformer_trace", "build", "--verbose", "--out"]
work = Path(tempfile.mkdtemp(prefix="bench-"))
docs, site, config = scratch_site(work)
fresh, _ = run_timed(build + [str(docs)], env)
shutil.rmtree(work)
work = Path(tempfile.mkdtemp(prefix="bench-"))
docs, site, config = scratch_site(work)
cold, log = run_timed(build + [str(docs)], env)
mkdocs, _ = run_timed([py, "-m", "mkdocs", "build", "-q", "-f", str(config)], env)
again, _ = run_timed(build + [str(docs)], env)
again_mkdocs, _ = run_timed([py, "-m", "mkdocs", "build", "-q", "-f", str(config)], env)
shutil.rmtree(work)
shutil.rmtree(cache)
regeneration = {
    "fresh build": fresh, "cold build": cold, "mkdocs build": mkdocs, "cold total": cold + mkdocs,
    "warm build": again, "warm total": again + again_mkdocs, "import torch": import_seconds(py, "import torch", 1),
    "import": import_seconds(py, "import transformer_trace.build, transformer_trace.reports", 1),
    "log": log,
}
result = {"regeneration": regeneration, "warm": run.bench_warm_regeneration(1),
          "trace": one_intra_op_thread(run.bench_trace, 3, processes=False),
          "corpus": one_intra_op_thread(corpus_rows, CORPUS_REPEATS, processes=True)}
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(result, out)
"""

# The traced and plain runs of the examples and the corpus drivers, both checkouts alike (the baseline's own
# benchmarks/ may not do it): PyTorch computes on the script's thread alone (in this process for the examples'
# interleaved runs; through OMP_NUM_THREADS in the corpus's processes, each a new one). Their CPU time is that thread's
# (time.thread_time); with worker threads, on a busy machine, it also counted the thread spinning while it waited for
# workers that got no core: a 20 ms plain run measured anywhere from 11 to 100 ms of CPU, and the plain runs of one
# unchanged script differed between the checkouts by up to 1.3x. The whole `trace` command keeps its threads.
ONE_INTRA_OP_THREAD = """
def one_intra_op_thread(measure, repeats, processes):
    import torch
    threads, variable = torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")
    torch.set_num_threads(1)
    if processes:
        os.environ["OMP_NUM_THREADS"] = "1"
    try:
        return measure(repeats)
    finally:
        torch.set_num_threads(threads)
        if processes:
            if variable is None:
                del os.environ["OMP_NUM_THREADS"]
            else:
                os.environ["OMP_NUM_THREADS"] = variable
"""

# The corpus drivers' repeats, both checkouts alike: each driver is measured by the checkout's own benchmarks/corpus.py
# (`corpus.py DRIVER REPEATS`: the minimum of REPEATS interleaved plain, traced and idle runs), as its bench_corpus
# measures it, but with the repeats said here. A driver whose run takes a few milliseconds is repeated
# CORPUS_REPEATS times: its tracer adds ~1 ms, so a 10 % verdict rests on ~0.1 ms, and the minimum of five such runs
# on a shared machine differed by more than that from one measurement to the next; one whose run takes seconds
# (harvardnlp's, ~2 s) FEW_REPEATS times, which keeps the measurement's time in check.
CORPUS_REPEATS, FEW_REPEATS = 15, 5
SLOW_DRIVERS = ("harvardnlp_annotated_transformer/trace_driver.py",)
CORPUS_MEASURE = f"""
CORPUS_REPEATS = {CORPUS_REPEATS}


def corpus_rows(repeats):
    import subprocess
    from benchmarks import corpus
    env = {{**os.environ, "NO_MKDOCS_2_WARNING": "1"}}
    rows = []
    for driver in corpus.drivers():
        name = corpus.driver_name(driver)
        count = {FEW_REPEATS} if name in {SLOW_DRIVERS!r} else repeats
        result = subprocess.run([sys.executable, corpus.__file__, str(driver), str(count)], capture_output=True,
                                text=True, env=env, check=True)
        times = json.loads(result.stdout.splitlines()[-1])
        hits = times.get("hits")
        if not hits or min(hits) == 0 or len(set(hits)) > 1:
            raise RuntimeError(f"{{name}}: the traced runs captured {{hits}} hits")
        rows.append((name, *(min(run[0] for run in times[kind]) for kind in ("plain", "traced")),
                     *(min(run[1] for run in times[kind]) for kind in ("plain", "traced", "idle"))))
    return rows
"""
DRIVER = DRIVER.replace("\nresult = {", ONE_INTRA_OP_THREAD + CORPUS_MEASURE + "\nresult = {", 1)


@dataclass(frozen=True)
class Figure:
    """One figure of the page, measured on both checkouts (None where a checkout does not have it)."""

    name: str
    baseline: float | None
    current: float | None

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.current is None or self.baseline <= 0:
            return None
        return self.current / self.baseline

    @property
    def slower(self) -> bool:
        ratio = self.ratio
        return (ratio is not None and ratio > 1 + SLOWER_BY
                and self.current - self.baseline >= SLOWER_FLOOR)  # type: ignore[operator]


def flatten(measured: dict) -> dict[str, float]:
    """The seconds of one checkout's measurement (what DRIVER writes), by the name the page gives them."""
    regen, warm = measured["regeneration"], measured["warm"]
    figures = {
        "every report + `mkdocs build`, from scratch (cold build)": regen["cold total"],
        "&nbsp;&nbsp;generator, from scratch": regen["cold build"],
        "&nbsp;&nbsp;`mkdocs build`": regen["mkdocs build"],
        "generator on a fresh clone": regen["fresh build"],
        "every report + `mkdocs build`, same inputs again": regen["warm total"],
        "&nbsp;&nbsp;generator, same inputs again": regen["warm build"],
        "`import torch`": regen["import torch"],
        "`import transformer_trace.build, transformer_trace.reports`": regen["import"],
    }
    figures |= with_every_reports_figures(
        {f"&nbsp;&nbsp;{step}": seconds for step, seconds in build_step_seconds(regen).items()})
    figures |= {
        "warm regeneration in `serve`, until the new pages are served": warm["warm"],
        "&nbsp;&nbsp;the same as new processes (`build --model` + `mkdocs build`)": warm["cold"],
        "&nbsp;&nbsp;warm, until the print view is written too": warm["warm settled"],
        "&nbsp;&nbsp;warm, without the helper process": warm["warm alone"],
        "`serve` start (imports, a full in-process build)": warm["start"],
    }
    for script, plain, traced, command, bundled in measured["trace"]:
        figures |= {f"`{script}`: plain run": plain, f"`{script}`: traced run": traced,
                    f"`{script}`: whole `trace` command": command,
                    f"`{script}`: bundled report, same size": bundled}
    return figures | corpus_figures(measured)


def corpus_figures(measured: dict) -> dict[str, float]:
    """The corpus drivers' plain and traced CPU seconds of one checkout's measurement, by the name the page gives them
    (none where it did not measure the corpus)."""
    figures = {}
    for name, _, _, plain_cpu, traced_cpu, _ in measured.get("corpus", []):
        figures |= {f"`{name}`: {CORPUS_PLAIN}": plain_cpu, f"`{name}`: {CORPUS_TRACED}": traced_cpu}
    return figures


CORPUS_PLAIN, CORPUS_TRACED = "corpus driver, plain run (CPU)", "corpus driver, traced run (CPU)"


def corpus_overheads(figures: dict[str, float]) -> dict[str, float]:
    """Each corpus driver's tracing overhead, traced CPU ÷ plain CPU, by driver."""
    suffix = f": {CORPUS_TRACED}"
    return {name.removesuffix(suffix): seconds / figures[name.removesuffix(suffix) + f": {CORPUS_PLAIN}"]
            for name, seconds in figures.items() if name.endswith(suffix)
            and figures.get(name.removesuffix(suffix) + f": {CORPUS_PLAIN}")}


def corpus_lines(base: dict[str, float], mine: dict[str, float]) -> list[str]:
    """The corpus's tracing overhead per driver on both checkouts (issue 39: not worse), where both measured it."""
    overheads = side_by_side(corpus_overheads(base), corpus_overheads(mine))
    if not any(f.ratio is not None for f in overheads):
        return []
    worse = [f.name for f in overheads if f.slower]
    return ["| corpus driver: tracing overhead (traced CPU ÷ plain CPU) | baseline | this commit | worse? |",
            "| --- | ---: | ---: | --- |",
            *(f"| {f.name} | {'—' if f.baseline is None else f'{f.baseline:.2f}×'} | "
              f"{'—' if f.current is None else f'{f.current:.2f}×'} | {'**yes**' if f.slower else 'no'} |"
              for f in overheads), "",
            (f"The overhead is worse (over {SLOWER_BY:.0%} higher) for {len(worse)} of {len(overheads)} drivers: "
             f"{', '.join(worse)}." if worse else f"The overhead is not worse by over {SLOWER_BY:.0%} for any of the "
             f"{len(overheads)} drivers."), ""]


def build_step_seconds(regeneration: dict) -> dict[str, float]:
    """The from-scratch build's steps (forward pass, pages, figures per report), read from its log by this checkout's
    parser; a record written before the log was kept gives the steps it read then."""
    if "log" not in regeneration:
        return dict(regeneration.get("steps", {}))
    steps: dict[str, list[float]] = {}
    build_steps(regeneration["log"], steps)
    return {name: values[0] for name, values in steps.items()}


# the reports' figure steps summed: one pool of workers, forked as the first report's figures begin, draws every
# report's (a build forks it once since 0cbd66f), so the first report's row carries the pool's start
EVERY_REPORTS_FIGURES = "&nbsp;&nbsp;figures, every report together"


def with_every_reports_figures(figures: dict[str, float]) -> dict[str, float]:
    """One measurement's figures with its reports' figure steps summed beside them (where it has two or more)."""
    drawn = [name for name in figures if name.endswith(": figures")]
    if len(drawn) < 2:
        return figures
    rows = [(name, seconds) for name, seconds in figures.items() if name != EVERY_REPORTS_FIGURES]
    after = [name for name, _ in rows].index(drawn[-1]) + 1  # beside the reports' rows it sums
    return dict(rows[:after] + [(EVERY_REPORTS_FIGURES, sum(figures[name] for name in drawn))] + rows[after:])


def figure_rows_line(figures: list[Figure]) -> str:
    """Where a report's figures row is slower but every report's figures together are not: why (the one pool)."""
    total = next((f for f in figures if f.name.endswith(EVERY_REPORTS_FIGURES)), None)
    parts = [f for f in figures if f.slower and f.name.endswith(": figures")]
    if total is None or total.ratio is None or total.slower or not parts:
        return ""
    return (f"{', '.join(f.name.replace('&nbsp;', '') for f in parts)}: a part, not a step of its own. One pool of "
            "workers draws every report's figures, forked as the first report's begin, so the first report's row "
            f"carries the pool's start; every report's figures together took {seconds_text(total.baseline)} on the "
            f"baseline and {seconds_text(total.current)} here ({total.ratio:.2f}×).")


def medians(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the rounds that measured it, in the first round's order."""
    names = list(dict.fromkeys(name for measured in rounds for name in measured))
    return {name: statistics.median(r[name] for r in rounds if name in r) for name in names}


def side_by_side(baseline: dict[str, float], current: dict[str, float]) -> list[Figure]:
    names = list(dict.fromkeys([*current, *baseline]))
    return [Figure(name, baseline.get(name), current.get(name)) for name in names]


def multiple(seconds: float, yardstick: float, goal: float) -> str:
    times = seconds / yardstick
    return f"{times:.2f}× ({times - goal:+.2f}× from {goal:g}×)"


def seconds_text(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.1f} ms" if value < 0.1 else f"{value:.2f} s"


# Above this many times the cores, the 1-minute load average says other work took a large share of them.
BUSY_LOAD_PER_CORE = 1.0
# A yardstick whose slowest timing is this much over its fastest: the machine's speed moved during the run.
YARDSTICK_DRIFT = 1.25
LOAD_EVERY_S = 10.0


@dataclass(frozen=True)
class Conditions:
    """What the machine was like while a side-by-side run measured: every yardstick timing, the 1-minute load average
    sampled through the run, the cores."""

    yardsticks: Sequence[float]
    load: Sequence[float]
    cores: int

    @property
    def yardstick(self) -> float:
        return statistics.median(self.yardsticks)

    @property
    def busy(self) -> bool:
        return max(self.load) > BUSY_LOAD_PER_CORE * self.cores or \
            max(self.yardsticks) > YARDSTICK_DRIFT * min(self.yardsticks)

    def paragraph(self) -> str:
        text = (f"The yardstick took {min(self.yardsticks):.3f} to {max(self.yardsticks):.3f} s (median "
                f"{self.yardstick:.3f} s, {len(self.yardsticks)} timings). The machine's 1-minute load average during "
                f"the run ({len(self.load)} samples, every {LOAD_EVERY_S:g} s and beside each measurement; "
                f"{self.cores} cores): {min(self.load):.1f} to {max(self.load):.1f}, median "
                f"{statistics.median(self.load):.1f}.")
        if self.busy:
            text += (f" **The machine was busy** (a load over its {self.cores} cores, or a yardstick that drifted over "
                     f"{YARDSTICK_DRIFT - 1:.0%}): other work competed for the cores, so the seconds, the ratios, the "
                     "slower column and the multiples below say as much about that work as about the code. Rerun on a "
                     "quiet machine for an answer.")
        return text


def is_control(name: str) -> bool:
    """A figure of the same code on both checkouts (`import torch`, a script's or a corpus driver's plain run): what
    separates its two sides is the machine."""
    return name == "`import torch`" or name.endswith(": plain run") or name.endswith(CORPUS_PLAIN)


def controls_line(figures: list[Figure]) -> str:
    """What the run did to identical code, and which figures moved beyond it (the only ones this run shows slower)."""
    ratios = [f.ratio for f in figures if is_control(f.name) and f.ratio is not None]
    if not ratios:
        return ""
    low, high = min(ratios), max(ratios)
    beyond = [f for f in figures
              if f.slower and not is_control(f.name) and f.ratio is not None and f.ratio > high]
    named = "; ".join(f"{f.name.replace('&nbsp;', '')} ({f.ratio:.2f}×)" for f in beyond)
    return (f"The controls, {len(ratios)} figures of the same code on both checkouts (`import torch`, the plain runs "
            f"of the trace examples and of the corpus drivers), came out {low:.2f}× to {high:.2f}× here: a ratio "
            "within that spread is what this run did to identical code. "
            + (f"Slower beyond it: {named}." if beyond else f"No figure is slower by more than the controls moved."))


def section(baseline: Checkout, current: Checkout, base: dict[str, float], mine: dict[str, float], rounds: int,
            conditions: Conditions) -> str:
    """The page's section: the run and the machine's load, the yardstick multiples, every figure side by side, the
    verdict."""
    figures = side_by_side(base, mine)
    slower = [f for f in figures if f.slower]
    yardstick = conditions.yardstick
    cold, warm = "every report + `mkdocs build`, from scratch (cold build)", \
        "warm regeneration in `serve`, until the new pages are served"
    lines = [
        "## Side by side with the baseline", "",
        f"This commit ({current.label}) and the commit this work started from ({baseline.label}, a worktree of it with "
        f"its own code), measured by `benchmarks/run.py --baseline` in one run: {rounds} "
        f"round{'s' if rounds != 1 else ''}, each measuring both checkouts in turn (the first alternating), each "
        "round one from-scratch build, one warm regeneration"
        f"{', the trace examples and the corpus drivers' if corpus_overheads(mine) else ' and the trace examples'} "
        "per checkout; medians over the rounds. The yardstick is fixed pure-Python work (a modular "
        "sum over a million integers, benchmarks/compare.py), timed in a new interpreter before and after every "
        "measurement; the multiples divide by its median. To measure again, on a quiet machine: "
        f"`nice .venv/bin/python benchmarks/run.py --baseline {baseline.label} --rounds 3` (benchmarks/README.md).", "",
        conditions.paragraph(), "",
        "| as multiples of the yardstick | baseline | this commit | goal |", "| --- | ---: | ---: | ---: |",
        f"| cold build: every report + `mkdocs build` | {multiple(base[cold], yardstick, COLD_GOAL)} | "
        f"{multiple(mine[cold], yardstick, COLD_GOAL)} | {COLD_GOAL:g}× |",
        f"| warm regeneration from the page (`serve`) | {multiple(base[warm], yardstick, WARM_GOAL)} | "
        f"{multiple(mine[warm], yardstick, WARM_GOAL)} | {WARM_GOAL:g}× |", "",
        f"| figure | baseline ({baseline.label}) | this commit | ratio | slower? |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for f in figures:
        ratio = "—" if f.ratio is None else f"{f.ratio:.2f}×"
        lines.append(f"| {f.name} | {seconds_text(f.baseline)} | {seconds_text(f.current)} | {ratio} | "
                     f"{'**yes**' if f.slower else 'no'} |")
    verdict = (f"Slower here (over {SLOWER_BY:.0%} and {SLOWER_FLOOR * 1000:g} ms longer than the baseline): "
               + "; ".join(f"{f.name.replace('&nbsp;', '')} ({f.ratio:.2f}×)" for f in slower) + "."
               if slower else f"Nothing is slower than the baseline by over {SLOWER_BY:.0%} (and "
               f"{SLOWER_FLOOR * 1000:g} ms).")
    controls, parts = controls_line(figures), figure_rows_line(figures)
    return "\n".join(lines + ["", verdict, *(["", parts] if parts else []), *(["", controls] if controls else []), "",
                              *corpus_lines(base, mine)]).rstrip("\n") + "\n\n"


def yardstick_seconds(python: str = sys.executable) -> float:
    result = subprocess.run([python, "-c", YARDSTICK], capture_output=True, text=True, check=True)
    return float(result.stdout.strip())


def measure(checkout: Checkout, parts: str = "all") -> dict[str, float]:
    """One checkout's figures, measured by its own code in its own interpreter: every part (DRIVER), or (``parts``
    "corpus") the corpus drivers' tracing overhead alone (benchmarks/corpus_compare.py)."""
    from benchmarks.corpus_compare import CORPUS_DRIVER

    driver, read = (CORPUS_DRIVER, corpus_figures) if parts == "corpus" else (DRIVER, flatten)
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as work:
        out = Path(work) / "measured.json"
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        result = subprocess.run([str(checkout.python), "-c", driver, str(out)], cwd=checkout.root, env=env,
                                capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"{checkout.label}: the benchmarks failed: {result.stderr[-2000:]}")
        return read(json.loads(out.read_text(encoding="utf-8")))


@contextmanager
def load_samples(into: list[float]) -> Iterator[None]:
    """Append the 1-minute load average to ``into`` every LOAD_EVERY_S seconds while the block runs."""
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(LOAD_EVERY_S):
            into.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield
    finally:
        stop.set()
        sampler.join()


def compare(baseline: Checkout, current: Checkout, rounds: int, record: Path | None = None,
            parts: str = "all") -> str:
    """Measure both checkouts in ``rounds`` alternating rounds (``parts``: "all", or "corpus" alone); each
    measurement is added to ``record`` (JSON) as it ends, so a run stopped early still gives the rounds it completed
    (``section_from_record``)."""
    kept = {"baseline": baseline.label, "current": current.label, "load": [os.getloadavg()[0]],
            "cores": os.cpu_count() or 1, "measured": {"baseline": [], "current": []}, "yardsticks": [],
            "parts": parts}
    for round_ in range(rounds):
        order = [("baseline", baseline), ("current", current)]
        for side, checkout in order if round_ % 2 == 0 else order[::-1]:
            kept["yardsticks"].append(yardstick_seconds())
            started, first_sample = time.perf_counter(), len(kept["load"])
            with load_samples(kept["load"]):
                kept["measured"][side].append(measure(checkout, parts))
            kept["yardsticks"].append(yardstick_seconds())
            kept["load"].append(os.getloadavg()[0])
            during = kept["load"][first_sample:]
            print(f"round {round_ + 1}: {checkout.label} in {time.perf_counter() - started:.0f} s, 1-minute load "
                  f"average {min(during):.1f} to {max(during):.1f} ({kept['cores']} cores), yardstick "
                  f"{kept['yardsticks'][-2]:.3f} s before, {kept['yardsticks'][-1]:.3f} s after", file=sys.stderr)
            if record is not None:
                record.write_text(json.dumps(kept), encoding="utf-8")
    return section_from_record(kept)


def section_from_record(kept: dict) -> str:
    """The section from the rounds both checkouts completed, with the record's ``note`` after the paragraphs on the
    run and the machine."""
    complete = min(len(kept["measured"]["baseline"]), len(kept["measured"]["current"]))
    if not complete:
        raise RuntimeError("no round measured both checkouts")
    labels = {side: Checkout(kept[side], Path(), Path()) for side in ("baseline", "current")}
    conditions = Conditions(kept["yardsticks"], kept["load"], kept.get("cores") or os.cpu_count() or 1)
    if kept.get("parts") == "corpus":
        from benchmarks.corpus_compare import corpus_section

        return corpus_section(labels["baseline"], labels["current"], medians(kept["measured"]["baseline"][:complete]),
                              medians(kept["measured"]["current"][:complete]), complete, conditions)
    rounds = {side: [with_every_reports_figures(r) for r in kept["measured"][side][:complete]]
              for side in ("baseline", "current")}  # a record written before the sum was a row: summed here
    text = section(labels["baseline"], labels["current"], medians(rounds["baseline"]), medians(rounds["current"]),
                   complete, conditions)
    if kept.get("note"):  # how this record's run departed from the plan above (said where the reader needs it)
        intro_end = text.index("\n\n| as multiples of the yardstick")
        text = text[:intro_end] + "\n\n" + kept["note"] + text[intro_end:]
    return text
