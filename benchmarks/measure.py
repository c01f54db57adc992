"""What the benchmarks measure with: interleaved medians in this process, timed commands in new ones, the step
timings a verbose build log states, and a scratch site to build into."""

from __future__ import annotations

import re
import resource
import shutil
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def interleaved(fns: dict, repeats: int, sync=None) -> dict[str, float]:
    """Median per function, calls interleaved so drift in machine speed hits all alike."""
    for fn in fns.values():
        fn(), fn()
    samples = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            if sync:
                sync()
            start = time.perf_counter()
            fn()
            if sync:
                sync()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def run_timed(cmd: list[str], env=None) -> tuple[float, str]:
    return run_timed_cpu(cmd, env)[::2]


def run_timed_cpu(cmd: list[str], env=None) -> tuple[float, float, str]:
    """Wall-clock seconds, CPU seconds (user + system, the process and its children: figure workers included) and
    stderr.
    On a shared machine the CPU time says what the command cost, whatever else competed for the cores."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed: {result.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result.stderr


def scratch_site(work: Path, copy: bool = False) -> tuple[Path, Path, Path]:
    """A docs folder in ``work`` with the project's hand-written pages (links to them, or copies: the serve process
    publishes no link to outside its project), and a mkdocs.yml that builds it into work/site."""
    docs, site = work / "docs", work / "site"
    for name in ("stylesheets", "how-it-works.md", "notebooks", "benchmarks.md"):
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        if not copy:
            (docs / name).symlink_to(ROOT / "docs" / name)
        elif (ROOT / "docs" / name).is_dir():
            shutil.copytree(ROOT / "docs" / name, docs / name)
        else:
            shutil.copyfile(ROOT / "docs" / name, docs / name)
    config = work / "mkdocs.yml"
    config.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nsite_dir: {site}\n")
    return docs, site, config


FIGURE_STEP = re.compile(r"^(?P<report>[\w-]+): (?P<drawn>\d+) of (?P<total>\d+) figures drawn .* in "
                         r"(?P<seconds>[\d.]+) s$")


STEP = re.compile(r"^(?P<report>[\w-]+): (?P<what>forward pass|\d+ pages).* in (?P<seconds>[\d.]+) s")


HELD_OUT = re.compile(r"^(?P<report>[\w-]+): held-out score (?P<how>read back|measured)"
                      r"(?: ahead \((?P<ahead>[\d.]+) s in a thread[^)]*\), waited for)?.* in (?P<seconds>[\d.]+) s$")


# What the CLI's log handler writes before each message (generator/cli.py: "%(levelname)s %(name)s: "). The logger
# was "generator" before the package was renamed transformer_trace; both are read, so an older checkout's log parses.
LOG_PREFIX = re.compile(r"^[A-Z]+ [\w.]+: ")


def log_message(line: str) -> str:
    """A log line without its level and logger name: the message the generator wrote."""
    return LOG_PREFIX.sub("", line, count=1)


def build_steps(log: str, steps: dict[str, list[float]]) -> None:
    """Add the step timings a `transformer_trace build --verbose` log states to ``steps`` (name -> samples)."""
    for line in log.splitlines():
        message = log_message(line)
        if match := FIGURE_STEP.match(message):
            steps.setdefault(f"{match['report']}: figures", []).append(float(match["seconds"]))
        elif match := STEP.match(message):
            what = "pages" if match["what"].endswith("pages") else "forward pass"
            steps.setdefault(f"{match['report']}: {what}", []).append(float(match["seconds"]))
        elif match := HELD_OUT.match(message):
            steps.setdefault(f"{match['report']}: held-out score {match['how']}", []).append(float(match["seconds"]))
            # measured in a thread begun before the runs: its own time, beside the wait above
            if match["ahead"] is not None:
                steps.setdefault(f"{match['report']}: held-out score in its thread", []).append(float(match["ahead"]))


def import_seconds(py: str, code: str, repeats: int = 3) -> float:
    # warm the file cache and bytecode first: the first import of a fresh venv is much slower
    run_timed([py, "-c", code])
    return statistics.median(run_timed([py, "-c", code])[0] for _ in range(repeats))
