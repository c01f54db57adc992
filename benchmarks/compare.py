"""This checkout's regeneration and trace figures beside another checkout's (the commit this work started from),
measured in the same run, with a fixed pure-Python yardstick that turns seconds into machine-independent multiples.

    nice .venv/bin/python benchmarks/run.py --baseline /tmp/baseline            # replaces its section of the page

The other checkout is measured with its own code: its benchmarks/run.py functions run in its own interpreter
(``BASELINE/.venv/bin/python`` unless ``--baseline-python`` says otherwise), in rounds that alternate which checkout
goes first, so drift in the machine's load falls on both alike.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

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
# benchmarks/run.py's warm regeneration and trace measurements, one repeat each.
DRIVER = """
import json, os, shutil, sys, tempfile
from pathlib import Path
sys.path.insert(0, ".")
from benchmarks import run
from benchmarks.measure import build_steps, import_seconds, run_timed, scratch_site

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
steps = {}
build_steps(log, steps)
regeneration = {
    "fresh build": fresh, "cold build": cold, "mkdocs build": mkdocs, "cold total": cold + mkdocs,
    "warm build": again, "warm total": again + again_mkdocs, "import torch": import_seconds(py, "import torch", 1),
    "import": import_seconds(py, "import transformer_trace.build, transformer_trace.reports", 1),
    "steps": {name: values[0] for name, values in steps.items()},
}
result = {"regeneration": regeneration, "warm": run.bench_warm_regeneration(1), "trace": run.bench_trace(3)}
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(result, out)
"""


@dataclass(frozen=True)
class Checkout:
    label: str
    root: Path
    python: Path

    @classmethod
    def at(cls, root: Path, python: Path | None = None) -> Checkout:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        return cls(commit or root.name, root.resolve(), python or root / ".venv" / "bin" / "python")


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
    figures |= {f"&nbsp;&nbsp;{step}": seconds for step, seconds in regen["steps"].items()}
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
    return figures


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


def section(baseline: Checkout, current: Checkout, base: dict[str, float], mine: dict[str, float],
            yardstick: float, rounds: int, load: tuple[float, float]) -> str:
    """The page's section: the yardstick multiples first, then every figure side by side, then the verdict."""
    figures = side_by_side(base, mine)
    slower = [f for f in figures if f.slower]
    cold, warm = "every report + `mkdocs build`, from scratch (cold build)", \
        "warm regeneration in `serve`, until the new pages are served"
    lines = [
        "## Side by side with the baseline", "",
        f"This commit ({current.label}) and the commit this work started from ({baseline.label}, a worktree of it with "
        f"its own code), measured by `benchmarks/run.py --baseline` in one run: {rounds} "
        f"round{'s' if rounds != 1 else ''}, each measuring both checkouts in turn (the first alternating), each "
        "round one from-scratch build and one warm regeneration and "
        "the trace examples per checkout; medians over the rounds. The yardstick is fixed pure-Python work (a modular "
        f"sum over a million integers, benchmarks/compare.py), timed in a new interpreter beside every measurement: "
        f"median {yardstick:.3f} s. The machine is shared: its 1-minute load average was {load[0]:.1f} at the start "
        f"and {load[1]:.1f} at the end.", "",
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
    return "\n".join(lines + ["", verdict, ""]) + "\n"


def yardstick_seconds(python: str = sys.executable) -> float:
    result = subprocess.run([python, "-c", YARDSTICK], capture_output=True, text=True, check=True)
    return float(result.stdout.strip())


def measure(checkout: Checkout) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as work:
        out = Path(work) / "measured.json"
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        result = subprocess.run([str(checkout.python), "-c", DRIVER, str(out)], cwd=checkout.root, env=env,
                                capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"{checkout.label}: the benchmarks failed: {result.stderr[-2000:]}")
        return flatten(json.loads(out.read_text(encoding="utf-8")))


def compare(baseline_root: Path, baseline_python: Path | None, current_root: Path, rounds: int,
            record: Path | None = None) -> str:
    """Measure both checkouts in ``rounds`` alternating rounds; each measurement is added to ``record`` (JSON) as it
    ends, so a run stopped early still gives the rounds it completed (``section_from_record``)."""
    baseline, current = Checkout.at(baseline_root, baseline_python), Checkout.at(current_root, Path(sys.executable))
    kept = {"baseline": baseline.label, "current": current.label, "load": [os.getloadavg()[0]],
            "measured": {"baseline": [], "current": []}, "yardsticks": []}
    for round_ in range(rounds):
        order = [("baseline", baseline), ("current", current)]
        for side, checkout in order if round_ % 2 == 0 else order[::-1]:
            kept["yardsticks"].append(yardstick_seconds())
            started = time.perf_counter()
            kept["measured"][side].append(measure(checkout))
            kept["yardsticks"].append(yardstick_seconds())
            kept["load"][1:] = [os.getloadavg()[0]]
            print(f"round {round_ + 1}: {checkout.label} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
            if record is not None:
                record.write_text(json.dumps(kept), encoding="utf-8")
    return section_from_record(kept)


def section_from_record(kept: dict) -> str:
    """The section from the rounds both checkouts completed, with the record's ``note`` after its first paragraph."""
    complete = min(len(kept["measured"]["baseline"]), len(kept["measured"]["current"]))
    if not complete:
        raise RuntimeError("no round measured both checkouts")
    labels = {side: Checkout(kept[side], Path(), Path()) for side in ("baseline", "current")}
    text = section(labels["baseline"], labels["current"], medians(kept["measured"]["baseline"][:complete]),
                   medians(kept["measured"]["current"][:complete]), statistics.median(kept["yardsticks"]), complete,
                   (kept["load"][0], kept["load"][-1]))
    if kept.get("note"):  # how this record's run departed from the plan above (said where the reader needs it)
        intro_end = text.index("\n\n", text.index("\n\n") + 2)
        text = text[:intro_end] + "\n\n" + kept["note"] + text[intro_end:]
    return text
