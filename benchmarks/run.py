"""Benchmarks (not tests): speed of the models and of regeneration, written as a page of the site.

    .venv/bin/python benchmarks/run.py            # writes docs/benchmarks.md
    .venv/bin/python benchmarks/run.py --quick    # fewer repeats

Everything is measured side by side in one run on this machine: ratios matter more than seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.reports import REPORTS  # noqa: E402


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


def report_benchmarks() -> dict:
    """Each report's benchmark.py (generator/reports/<report>/benchmark.py), by report key, for those that have one."""
    import importlib.util

    modules = {}
    for key, report in REPORTS.items():
        name = f"{report.package}.benchmark"
        if importlib.util.find_spec(name):
            modules[key] = importlib.import_module(name)
    return modules


def model_tables(device: torch.device, repeats: int) -> tuple[list, list]:
    """Every report's model tables on ``device`` and, on the CPU, the targets they meet or miss."""
    tables, targets = [], []
    for module in report_benchmarks().values():
        own = module.model_tables(device, repeats, interleaved)
        tables += own
        if device.type == "cpu" and own:
            targets += module.targets(own)
    return tables, targets


def run_timed(cmd: list[str], env=None) -> tuple[float, str]:
    return run_timed_cpu(cmd, env)[::2]


def run_timed_cpu(cmd: list[str], env=None) -> tuple[float, float, str]:
    """Wall-clock seconds, CPU seconds (user + system, the process and its children: figure workers included) and stderr.
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


FIGURE_STEP = re.compile(r"^(?P<report>[\w-]+): (?P<drawn>\d+) of (?P<total>\d+) figures drawn .* in (?P<seconds>[\d.]+) s$")
STEP = re.compile(r"^(?P<report>[\w-]+): (?P<what>forward pass|\d+ pages).* in (?P<seconds>[\d.]+) s")
HELD_OUT = re.compile(r"^(?P<report>[\w-]+): held-out score (?P<how>read back|measured)"
                      r"(?: ahead \((?P<ahead>[\d.]+) s in a thread[^)]*\), waited for)?.* in (?P<seconds>[\d.]+) s$")


def build_steps(log: str, steps: dict[str, list[float]]) -> None:
    """Add the step timings a `generator build --verbose` log states to ``steps`` (name -> samples)."""
    for line in log.splitlines():
        message = line.split("generator: ", 1)[-1]
        if match := FIGURE_STEP.match(message):
            steps.setdefault(f"{match['report']}: figures", []).append(float(match["seconds"]))
        elif match := STEP.match(message):
            what = "pages" if match["what"].endswith("pages") else "forward pass"
            steps.setdefault(f"{match['report']}: {what}", []).append(float(match["seconds"]))
        elif match := HELD_OUT.match(message):
            steps.setdefault(f"{match['report']}: held-out score {match['how']}", []).append(float(match["seconds"]))
            if match["ahead"] is not None:  # measured in a thread begun before the runs: its own time, beside the wait above
                steps.setdefault(f"{match['report']}: held-out score in its thread", []).append(float(match["ahead"]))


def import_seconds(py: str, code: str, repeats: int = 3) -> float:
    run_timed([py, "-c", code])  # warm the file cache and bytecode first: the first import of a fresh venv is much slower
    return statistics.median(run_timed([py, "-c", code])[0] for _ in range(repeats))


def bench_regeneration(repeats: int = 3) -> dict:
    """Every report from scratch + `mkdocs build`, and the same again with unchanged inputs, ``repeats`` times
    interleaved (each from-scratch build in a fresh folder), medians; the steps of each build from its log."""
    py = sys.executable
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    out: dict = {"repeats": repeats, "load": [os.getloadavg()[0]]}
    # What every build pays before any work, and what remains of it: PyTorch, then the generator's own imports.
    out["import torch"] = import_seconds(py, "import torch")
    out["import"] = import_seconds(py, "import generator.build, generator.reports")
    out["import pyplot"] = import_seconds(py, "import matplotlib.pyplot")  # what the charts cost before they were drawn with Pillow
    out["import torchvision"] = import_seconds(py, "import torchvision")  # only for --weights imagenet or PATH
    out["import mkdocs"] = import_seconds(py, "import mkdocs.commands.build, material.plugins.search.plugin, mkdocs_jupyter.plugin")
    out["import mkdocs-jupyter"] = import_seconds(py, "import mkdocs_jupyter.plugin")
    samples: dict[str, list[float]] = {"fresh build": [], "cold build": [], "cold build cpu": [], "mkdocs build": [],
                                       "mkdocs build cpu": [], "mkdocs alone": [], "mkdocs alone cpu": [], "warm build": [], "warm total": []}
    steps: dict[str, list[float]] = {}
    fresh_steps: dict[str, list[float]] = {}
    caches: list[Path] = []
    for _ in range(repeats):
        # A fresh clone first: nothing remembered, so the GPT's held-out score is measured (once per weights) into an empty
        # cache; the build from scratch that follows (a new docs folder) reads it back, whatever the sources' state.
        caches.append(Path(tempfile.mkdtemp(prefix="bench-cache-")))
        env = {**env, "TT_CACHE_DIR": str(caches[-1])}
        work = Path(tempfile.mkdtemp(prefix="bench-"))
        docs, site, config = scratch_site(work)
        fresh, _, log = run_timed_cpu([py, "-m", "generator", "build", "--out", str(docs), "--verbose"], env)
        samples["fresh build"].append(fresh)
        build_steps(log, fresh_steps)
        shutil.rmtree(work, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix="bench-"))
        docs, site, config = scratch_site(work)
        cold, cold_cpu, log = run_timed_cpu([py, "-m", "generator", "build", "--out", str(docs), "--verbose"], env)
        mkdocs_s, mkdocs_cpu, _ = run_timed_cpu([py, "-m", "mkdocs", "build", "-q", "-f", str(config)], env)
        alone_s, alone_cpu, _ = run_timed_cpu([py, "-m", "mkdocs", "build", "-q", "-f", str(config)], {**env, "TT_PAGE_HELPER": "0"})
        warm, _ = run_timed([py, "-m", "generator", "build", "--out", str(docs)], env)
        warm_mkdocs, _ = run_timed([py, "-m", "mkdocs", "build", "-q", "-f", str(config)], env)
        samples["cold build"].append(cold)
        samples["cold build cpu"].append(cold_cpu)
        samples["mkdocs build"].append(mkdocs_s)
        samples["mkdocs build cpu"].append(mkdocs_cpu)
        samples["mkdocs alone"].append(alone_s)
        samples["mkdocs alone cpu"].append(alone_cpu)
        samples["warm build"].append(warm)
        samples["warm total"].append(warm + warm_mkdocs)
        build_steps(log, steps)
        if len(samples["cold build"]) < repeats:
            shutil.rmtree(work, ignore_errors=True)
    out.update({name: statistics.median(values) for name, values in samples.items()})
    out["steps"] = {name: statistics.median(values) for name, values in steps.items()}
    out["fresh steps"] = {name: statistics.median(values) for name, values in fresh_steps.items()}
    out["cold total"] = out["cold build"] + out["mkdocs build"]
    out["fresh total"] = out["fresh build"] + out["mkdocs build"]
    out["changed steps"] = []
    for key, report in REPORTS.items():  # each report regenerated for a new input of its own
        changed = report.options.example_change()
        if changed:
            _, log = run_timed([py, "-m", "generator", "build", "--model", key, *changed, "--out", str(docs), "--verbose"], env)
            out["changed steps"] += [line.split("generator: ", 1)[1] for line in log.splitlines() if "figures drawn" in line]
    run_timed([py, "-m", "generator", "build", "--out", str(docs)], env)
    run_timed([py, "-m", "mkdocs", "build", "-q", "-f", str(config)], env)
    files = [p for p in site.rglob("*") if p.is_file()]
    out["site bytes"] = sum(p.stat().st_size for p in files)
    out["figure bytes"] = sum(p.stat().st_size for p in files if p.suffix == ".png" and "/figures/" in str(p))
    out["figures"] = sum(1 for p in files if p.suffix == ".png" and "/figures/" in str(p))
    out["pages"] = sum(1 for p in files if p.name == "index.html")
    reports = [p for p in files if p.suffix == ".html" and p.relative_to(site).parts[0] in REPORTS]
    out["data uris"] = sum(p.read_text(errors="ignore").count("data:image/") for p in reports)
    shutil.rmtree(work, ignore_errors=True)
    for cache in caches:
        shutil.rmtree(cache, ignore_errors=True)
    out["load"].append(os.getloadavg()[0])
    return out


# ----------------------------------------------------------------------------- the MkDocs plugin


def bench_plugin(repeats: int) -> dict:
    """`mkdocs build` on a fresh clone (the plugin generates every report), then with every report up to date against a
    build that generates nothing (`generate: false`: navigation, math and assets only, what the MkDocs hooks did before
    the plugin), interleaved."""
    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="bench-plugin-"))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "mkdocs.yml", "docs"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    for rel in tracked:  # what a fresh clone has: no generated report
        if (ROOT / rel).is_file():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, work / rel)
    build_only = work / "build-only.yml"
    build_only.write_text("INHERIT: mkdocs.yml\nsite_dir: site-build-only\nplugins:\n  transformer-trace:\n    generate: false\n")

    def mkdocs(*args: str, extra_env: dict[str, str] | None = None) -> float:
        start = time.perf_counter()
        result = subprocess.run([py, "-m", "mkdocs", "build", "-q", *args], cwd=work, capture_output=True, text=True,
                                env={**env, **(extra_env or {})})
        if result.returncode:
            raise RuntimeError(f"mkdocs build {' '.join(args)} failed: {result.stderr[-2000:]}")
        return time.perf_counter() - start

    # A fresh clone remembers nothing: the GPT's held-out score is measured (and MkDocs-Jupyter converts the notebook,
    # its cache being relative to the working folder).
    out = {"fresh clone": mkdocs(extra_env={"TT_CACHE_DIR": str(work / ".cache" / "transformer-trace")})}
    t = interleaved({"up to date": lambda: mkdocs(), "no generation": lambda: mkdocs("-f", str(build_only))}, repeats)
    out.update(t)
    shutil.rmtree(work, ignore_errors=True)
    return out


def plugin_section(p: dict) -> list[str]:
    ratio = p["up to date"] / p["no generation"]
    return ["## `mkdocs build` with the plugin", "",
            "The `transformer-trace` plugin generates the reports `mkdocs.yml` declares when they are missing or their "
            "options changed; otherwise it only compares them with `docs/.generated.json` (no PyTorch import).", "",
            "| build | time | ratio |", "| --- | ---: | ---: |",
            f"| `mkdocs build` on a fresh clone (generates every report, then builds) | {p['fresh clone']:.1f} s | |",
            f"| `mkdocs build` without generation (`generate: false`, as the hooks built before the plugin) | {p['no generation']:.2f} s | 1.00× |",
            f"| `mkdocs build`, every report up to date | {p['up to date']:.2f} s | {ratio:.2f}× |", "",
            f"Up-to-date build within 1.05× of a build that generates nothing: {'yes' if ratio <= 1.05 else 'no'}.", ""]


# ----------------------------------------------------------------------------- warm regeneration (serve)

WARM_SENTENCES = ["purple otters juggle seven bright lanterns", "quiet rivers carry old stories north",
                  "eleven robots paint the morning sky", "brave kites dance over windy hills",
                  "small engines hum beneath wooden floors", "golden bees hunt for sweet clover"]


def bench_warm_regeneration(repeats: int) -> dict:
    """New sentences for the site's first report (the encoder–decoder): a cold CLI build + `mkdocs build` (new
    processes) against a regeneration in the warm `python -m generator serve` process (its Python API), interleaved
    in one run, medians."""
    from generator.site.forms import forms
    from generator.site.server import WarmServer

    report = next(iter(REPORTS))
    sentence = forms()[report]["fields"][0]["name"]  # its first form field: the source sentence

    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="bench-warm-"))
    docs, site, config = scratch_site(work, copy=True)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    os.environ["NO_MKDOCS_2_WARNING"] = "1"
    run_timed([py, "-m", "generator", "build", "--out", str(docs), "--device", "cpu", "-q"], env)  # every report, as a real site
    out: dict = {"repeats": repeats, "load": [os.getloadavg()[0]]}
    started = time.perf_counter()
    server = WarmServer(docs, config)
    server.prepare()
    out["start"] = time.perf_counter() - started
    started = time.perf_counter()
    server.regenerate({"model": report, sentence: "the very first warm sentence here", "device": "cpu"})
    out["first"] = time.perf_counter() - started
    server.site.settle()
    cold, cold_build, warm, settled, alone, answers = [], [], [], [], [], []
    for i in range(repeats):
        words = WARM_SENTENCES[i % len(WARM_SENTENCES)].split()
        build_s, _ = run_timed([py, "-m", "generator", "build", "--model", report, f"--{sentence}", " ".join(words[::-1]),
                                "--out", str(docs), "--device", "cpu", "-q"], env)
        mkdocs_s, _ = run_timed([py, "-m", "mkdocs", "build", "-q", "-f", str(config)], env)
        cold.append(build_s + mkdocs_s)
        cold_build.append(build_s)
        started = time.perf_counter()
        answers.append(server.regenerate({"model": report, sentence: " ".join(words), "device": "cpu"}))
        warm.append(time.perf_counter() - started)
        server.site.settle()  # the print view, rendered after the answer (held until then): nothing overlaps what follows
        settled.append(time.perf_counter() - started)
        saved, os.environ["TT_PAGE_HELPER"] = os.environ.get("TT_PAGE_HELPER"), "0"  # the same without the helper process
        try:
            started = time.perf_counter()
            server.regenerate({"model": report, sentence: " ".join(words[1:] + words[:1]), "device": "cpu"})
            alone.append(time.perf_counter() - started)
            server.site.settle()
        finally:
            os.environ.pop("TT_PAGE_HELPER") if saved is None else os.environ.__setitem__("TT_PAGE_HELPER", saved)
    server.site.close()
    shutil.rmtree(work, ignore_errors=True)
    out["load"].append(os.getloadavg()[0])
    out.update({
        "cold": statistics.median(cold), "cold build": statistics.median(cold_build), "warm": statistics.median(warm),
        "warm settled": statistics.median(settled), "warm alone": statistics.median(alone),
        "warm generate": statistics.median(a["generate_seconds"] for a in answers),
        "warm site": statistics.median(a["site_seconds"] for a in answers),
        "pages": statistics.median(a["pages_rebuilt"] for a in answers),
        "later": statistics.median(a["pages_later"] for a in answers),
        "site builds": sorted({a["site_build"] for a in answers}),
    })
    return out


def warm_section(w: dict) -> list[str]:
    ratio = w["warm"] / w["cold"]
    return [
        "## Warm regeneration (`python -m generator serve`)", "",
        f"New encoder–decoder sentences, {w['repeats']} interleaved repeats in one run, medians. Cold: new processes, as from a "
        "shell. Warm: a regeneration in the serve process (`POST /api/regenerate` without the HTTP), where PyTorch, the models, "
        "the figure fonts and the MkDocs configuration stay loaded and only the pages whose Markdown changed are rebuilt, half of "
        "them in a helper process forked for it, while the figures are drawn; the answer comes once the pages a reader browses "
        "are served, and the report's print view (every snapshot's body again) is rendered right after it, a request for it "
        "held until it is written.", "",
        "| | time | ratio |", "| --- | ---: | ---: |",
        f"| cold: `python -m generator build --model encoder-decoder` + `mkdocs build` | {w['cold']:.2f} s | 1.00× |",
        f"| &nbsp;&nbsp;of which the generator | {w['cold build']:.2f} s | |",
        f"| warm: regenerate in the serve process, until the new pages are served | {w['warm']:.2f} s | {ratio:.2f}× |",
        f"| &nbsp;&nbsp;of which the generator (forward pass, pages, figures; meanwhile the changed site pages are rendered) | {w['warm generate']:.2f} s | |",
        f"| &nbsp;&nbsp;of which the site update after the swap ({w['pages']:.0f} pages moved in or rebuilt, search index rewritten; {', '.join(w['site builds'])} build) | {w['warm site']:.2f} s | |",
        f"| warm, until the print view is written too ({w['later']:.0f} page, every snapshot again, rendered after the answer; a request for it waits until then) | {w['warm settled']:.2f} s | |",
        f"| warm, without the helper process (`TT_PAGE_HELPER=0`: every changed page rendered in the serve process) | {w['warm alone']:.2f} s | {w['warm alone'] / w['cold']:.2f}× |",
        "", "| target | measured | met? |", "| --- | --- | --- |",
        f"| warm regeneration ≤ 0.3× cold build + `mkdocs build` | {ratio:.2f}× | {'yes' if ratio <= 0.3 else 'no'} |",
        f"| warm regeneration ≤ 1.0 s on this machine | {w['warm']:.2f} s | {'yes' if w['warm'] <= 1.0 else 'no'} |", "",
        f"Starting the server (imports, then a full in-process MkDocs build) took {w['start']:.1f} s, and its first regeneration "
        f"{w['first']:.2f} s; both are paid once per `make serve`. The figures are Pillow drawings of milliseconds each; in the "
        "cold column, process start-up and imports are most of the time. "
        f"The machine is shared: its 1-minute load average was {w['load'][0]:.1f} at the start and {w['load'][1]:.1f} at the end "
        "of this measurement; times and the ratio move with that load, as figures and pages compete with other work for the "
        "two cores.", "",
    ]


def replace_section(out: Path, section: str) -> None:
    """Put ``section`` (starting with its '## ' title) into the existing page, replacing its earlier version."""
    title = section.split("\n", 1)[0]
    text = out.read_text(encoding="utf-8") if out.exists() else "# Benchmarks\n\n"
    start = text.find(title + "\n")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section + (text[end + 1:] if end >= 0 else "")
    else:
        anchor = text.find("## GPU")
        text = text[:anchor] + section + text[anchor:] if anchor >= 0 else text.rstrip("\n") + "\n\n" + section
    out.write_text(text, encoding="utf-8")
    print(section)


# ----------------------------------------------------------------------------- at the limits


def bench_limits(repeats: int) -> list[tuple[str, float, float]]:
    """Each report built at its documented input limit against its default input, interleaved, medians.

    A report's limit case comes from its options (``limit_example``); the generator alone is timed, as a user runs it.
    """
    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="bench-limits-"))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    rows = []
    for key, report in REPORTS.items():
        limit = report.options.limit_example()
        if not limit:
            continue
        label, flags = limit
        default = [py, "-m", "generator", "build", "--model", key, "--out", str(work / f"{key}-default"), "-q"]
        at_limit = [py, "-m", "generator", "build", "--model", key, *flags, "--out", str(work / f"{key}-limit"), "-q"]
        times: dict[str, list[float]] = {"default": [], "limit": []}
        for _ in range(repeats):
            times["default"].append(run_timed(default, env)[0])
            times["limit"].append(run_timed(at_limit, env)[0])
        rows.append((f"{report.short_title}: {label}", statistics.median(times["default"]), statistics.median(times["limit"])))
    shutil.rmtree(work, ignore_errors=True)
    return rows


def limits_section(rows: list[tuple[str, float, float]]) -> list[str]:
    lines = ["## At the limits", "",
             "Each report generated (`python -m generator build --model <report>`, no MkDocs) at its documented input limit "
             "and with its default input, alternately, medians. Figures stay bounded: long axes are labelled sparsely and "
             "many positions are sampled evenly, so the time grows with the model's work, not with the pictures.", "",
             "| input | default | at the limit | ratio | ≤ 3×? |", "| --- | ---: | ---: | ---: | --- |"]
    for label, default, limit in rows:
        ratio = limit / default
        lines.append(f"| {label} | {default:.1f} s | {limit:.1f} s | {ratio:.2f}× | {'yes' if ratio <= 3 else 'no'} |")
    return lines + [""]


# ----------------------------------------------------------------------------- GPT training and weights


def bench_training() -> dict:
    """`python -m generator train gpt` from scratch (the full default recipe), timed; its record against the bundled one."""
    from generator.reports import trainable, training

    key = trainable()[0]
    recipe = training(key)
    CHECKPOINT, load_record, record_path = recipe.CHECKPOINT, recipe.load_record, recipe.record_path
    work = Path(tempfile.mkdtemp(prefix="bench-train-"))
    out = work / CHECKPOINT.name  # torch.save names its archive after the file: same name, same bytes
    seconds, _ = run_timed([sys.executable, "-m", "generator", "train", key, "--out", str(out), "-q"])
    record = json.loads(record_path(out).read_text(encoding="utf-8"))
    bundled = load_record(CHECKPOINT) or {}
    shutil.rmtree(work, ignore_errors=True)
    return {"key": key, "wall": seconds, "record": record, "same curve": record["loss_curve"] == bundled.get("loss_curve"),
            "same checkpoint": record["checkpoint_sha256"] == bundled.get("checkpoint_sha256")}


def training_section(t: dict) -> list[str]:
    r = t["record"]
    c, cfg = r["corpus"], r["training"]
    lines = [f"## GPT training (`python -m generator train {t['key']}`)", "",
             f"The default recipe from scratch: {cfg['steps']:,} steps of {cfg['batch']} × {cfg['context']} bytes on {cfg['threads']} threads, "
             f"{t['wall']:.0f} s wall-clock for the whole command ({r['seconds']:.0f} s of training and held-out evaluation, the record's own "
             f"measure, and {r.get('cpu_seconds', float('nan')):.0f} s of CPU time over all threads). Held-out bits per byte: **{r['held_out_bits_per_byte']:.3f}**, against {c['bigram_bits_per_byte']:.3f} for the bigram "
             f"baseline and 8 for a uniform guess. Loss curve identical to the bundled checkpoint's record: "
             f"{'yes' if t['same curve'] else 'no'}; checkpoint byte-identical: {'yes' if t['same checkpoint'] else 'no'}.", "",
             "| target | measured | met? |", "| --- | --- | --- |",
             f"| training ≤ 10 minutes on 2 cores | {t['wall'] / 60:.1f} min | {'yes' if t['wall'] <= 600 else 'no'} |", "",
             "| step | batch loss (bits per byte, mean of the 50 steps before) | held-out bits per byte |", "| ---: | ---: | ---: |"]
    held = {int(step): bits for step, bits in r["held_out_curve"]}
    curve = r["loss_curve"]
    for step in sorted(held):
        window = curve[max(0, step - 50):step]
        lines.append(f"| {step:,} | {sum(window) / len(window) / math.log(2):.3f} | {held[step]:.3f} |")
    return lines + [""]


def bench_gpt_weights(repeats: int) -> list[tuple[str, float]]:
    """The GPT report generated with the trained checkpoint and with random weights, alternately, medians."""
    from generator.reports import trainable

    key = trainable()[0]
    work = Path(tempfile.mkdtemp(prefix="bench-gpt-weights-"))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    times: dict[str, list[float]] = {"trained": [], "random": []}
    for _ in range(repeats):
        for weights in times:
            cmd = [sys.executable, "-m", "generator", "build", "--model", key, "--weights", weights, "--out", str(work / weights), "-q"]
            times[weights].append(run_timed(cmd, env)[0])
    shutil.rmtree(work, ignore_errors=True)
    return [(weights, statistics.median(values)) for weights, values in times.items()]


def gpt_weights_section(rows: list[tuple[str, float]]) -> list[str]:
    base = dict(rows)["random"]
    lines = ["## GPT report: trained vs random weights", "",
             "`python -m generator build --model gpt --weights trained|random` (no MkDocs), alternately, medians. Both measure the "
             "held-out bits per byte of their weights and write the same pages; the trained run also loads the checkpoint.", "",
             "| weights | time | ratio |", "| --- | ---: | ---: |"]
    lines += [f"| {weights} | {t:.1f} s | {t / base:.2f}× |" for weights, t in rows]
    return lines + [""]


# ----------------------------------------------------------------------------- tracing a user's script


def bench_trace(repeats: int) -> list[tuple[str, float, float, float, float]]:
    """Each bundled example script (examples/*_trace.py) run plainly and under the tracer, interleaved, medians; the whole
    `python -m generator trace` command (run, checks, pages, figures, data; no MkDocs) in a new process; and the bundled
    report of the same numbering at the example's size (`build`, no MkDocs), alternately with it."""
    import contextlib
    import io
    import runpy

    from generator.trace import bootstrap, choose_numbering, specs
    from generator.trace.capture import CAPTURE_BUDGET_BYTES, marker_spec, user_files
    from generator.trace.markers import scan

    rows = []
    work = Path(tempfile.mkdtemp(prefix="bench-trace-"))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    for script in sorted((ROOT / "examples").glob("*_trace.py")):
        markers = scan(user_files(script))
        key = choose_numbering("auto", markers, script)

        def plain(script=script):
            saved = sys.argv[:]
            sys.argv = [str(script)]
            try:
                runpy.run_path(str(script), run_name="__main__")
            finally:
                sys.argv = saved

        def traced(script=script, markers=markers):
            # the tracer of the script's own interpreter (generator/trace/bootstrap.py), run here: its cost, warm, without
            # the interpreter's start-up, which the whole command's time below includes
            spec = {"script": str(script), "markers": [marker_spec(m) for m in markers]}
            tracer = bootstrap.Tracer(spec, bootstrap.Results(str(work), CAPTURE_BUDGET_BYTES))
            saved = sys.argv[:]
            sys.argv = [str(script)]
            sys.settrace(tracer.global_trace)
            try:
                runpy.run_path(str(script), run_name="__main__")
            finally:
                sys.settrace(None)
                sys.argv = saved

        with contextlib.redirect_stdout(io.StringIO()):
            t = interleaved({"plain": plain, "traced": traced}, max(40, repeats * 4))  # milliseconds each: many pairs, a steady median
        command = [sys.executable, "-m", "generator", "trace", str(script), "--out", str(work / "trace"), "-q"]
        bundled = [sys.executable, "-m", "generator", "build", "--model", key, *specs()[key].example_size, "--out", str(work / "build"), "-q"]
        times: dict[str, list[float]] = {"trace": [], "build": []}
        for _ in range(max(1, repeats // 3)):
            times["trace"].append(run_timed(command, env)[0])
            times["build"].append(run_timed(bundled, env)[0])
        rows.append((script.name, t["plain"], t["traced"], statistics.median(times["trace"]), statistics.median(times["build"])))
    shutil.rmtree(work, ignore_errors=True)
    return rows


def trace_section(rows: list[tuple[str, float, float, float, float]]) -> list[str]:
    lines = ["## Tracing your own script (`python -m generator trace`)", "",
             "Each bundled example run as `python SCRIPT.py` would run it (in-process, `runpy`) and under the tracer of the script's "
             "own interpreter (here, warm: its start-up is in the whole command's time), interleaved, "
             "medians. Only frames of the files holding markers are traced line by line, and only marked values are copied. "
             "Then the whole command in a new process (imports, the run, the checks, the pages, figures and data/), alternately "
             "with `python -m generator build` of the bundled report of the same numbering at the example's size.", "",
             "| script | plain run | traced run | overhead | ≤ 1.5×? | whole `trace` command | bundled report, same size |",
             "| --- | ---: | ---: | ---: | --- | ---: | ---: |"]
    for name, plain, traced, whole, bundled in rows:
        ratio = traced / plain
        lines.append(f"| `{name}` | {plain * 1000:.1f} ms | {traced * 1000:.1f} ms | {ratio:.2f}× | {'yes' if ratio <= 1.5 else 'no'} | "
                     f"{whole:.1f} s | {bundled:.1f} s |")
    return lines + [""]


def page(results: dict) -> str:
    def ms(s: float) -> str:
        return f"{s * 1000:.1f} ms"

    lines = ["# Benchmarks", "",
             f"Measured by `benchmarks/run.py` on {results['machine']}, PyTorch {torch.__version__}, "
             f"{torch.get_num_threads()} threads. Medians of interleaved repeats; ratios are what to compare.", ""]
    for title, rows, base in results["model tables"]:
        lines += [f"## {title}", "", "| | time | ratio |", "| --- | ---: | ---: |"]
        for name, t in rows:
            lines.append(f"| {name} | {ms(t)} | {t / base:.2f}× |")
        lines.append("")
    lines += ["## Targets", "", "| target | measured | met? |", "| --- | --- | --- |"]
    lines += [f"| {target} | {measured} | {'yes' if met else 'no'} |" for target, measured, met in results["targets"]]
    r = results["regeneration"]
    lines.append(f"| every report + `mkdocs build` ≤ 10 s, from scratch | {r['cold total']:.1f} s | {'yes' if r['cold total'] <= 10 else 'no'} |")
    lines.append(f"| every report + `mkdocs build` ≤ 10 s, regenerating the same inputs | {r['warm total']:.1f} s | {'yes' if r['warm total'] <= 10 else 'no'} |")
    lines.append(f"| every report + `mkdocs build` ≤ 10 s, on a fresh clone (the GPT's held-out score not yet measured) | {r['fresh total']:.1f} s | {'yes' if r['fresh total'] <= 10 else 'no'} |")
    for name, seconds in r["steps"].items():
        if name.endswith(": figures"):
            lines.append(f"| {name.removesuffix(': figures')}: figures ≤ 0.5 s, from scratch | {seconds:.2f} s | {'yes' if seconds <= 0.5 else 'no'} |")
    if "warm" in results:
        w = results["warm"]
        lines.append(f"| warm regeneration of new encoder–decoder sentences in `serve` ≤ 1.0 s | {w['warm']:.2f} s | {'yes' if w['warm'] <= 1.0 else 'no'} |")
    lines.append(f"| a new input re-renders only what changed | {'; '.join(r['changed steps'])} | yes |")
    lines += ["", "## Regeneration, step by step", "",
              f"Every report from scratch, then `mkdocs build`, {r['repeats']} times interleaved with a rebuild from the same inputs, "
              f"medians. The machine's 1-minute load average was {r['load'][0]:.1f} at the start and {r['load'][1]:.1f} at the end.", "",
              "| step | time |", "| --- | ---: |",
              f"| `import torch` (every build needs it) | {r['import torch']:.2f} s |",
              f"| `import generator.build, generator.reports` (PyTorch included; no torchvision, no matplotlib) | {r['import']:.2f} s |"]
    stepped = 0.0
    for step, seconds in r["steps"].items():
        if ": held-out score" in step:
            continue
        lines.append(f"| {step} | {seconds:.2f} s |")
        stepped += seconds
        report = step.split(": ", 1)[0]
        for name, value in r["steps"].items():  # the GPT's held-out score, inside its forward pass
            if step.endswith("forward pass") and name.startswith(f"{report}: held-out score"):
                first = r["fresh steps"].get(f"{report}: held-out score measured")
                thread = r["fresh steps"].get(f"{report}: held-out score in its thread")
                on_fresh = (f": on a fresh clone {thread:.2f} s in a thread begun before the runs, at the lowest priority, of which "
                            f"its pages waited {first:.2f} s)" if thread is not None else f": {first:.2f} s on a fresh clone)" if first is not None else ")")
                how = ("read back (measured once per weights" + on_fresh if name.endswith("read back") else "measured")
                lines.append(f"| &nbsp;&nbsp;of which the held-out score, {how} | {value:.2f} s |")
    lines += [f"| generator, total (from scratch, a new process; {r['cold build cpu']:.1f} s of CPU time, figure workers included) | {r['cold build']:.2f} s |",
              f"| &nbsp;&nbsp;of which start-up, imports and exit (the total less the steps above) | {r['cold build'] - stepped:.2f} s |",
              f"| generator on a fresh clone (nothing remembered: the held-out score measured beside the runs, the report templates "
              f"compiled by a child process forked beside them) | {r['fresh build']:.2f} s |",
              f"| `mkdocs build` (a new process; {r['mkdocs build cpu']:.1f} s of CPU time, its helper process included: a share of the "
              f"pages' Markdown and search entries on the second core) | {r['mkdocs build']:.2f} s |",
              f"| &nbsp;&nbsp;the same without the helper process (`TT_PAGE_HELPER=0`: MkDocs alone, one core; {r['mkdocs alone cpu']:.1f} s of CPU time) | {r['mkdocs alone']:.2f} s |",
              f"| &nbsp;&nbsp;of which importing MkDocs, Material's search and mkdocs-jupyter | {r['import mkdocs']:.2f} s |",
              f"| &nbsp;&nbsp;&nbsp;&nbsp;of which mkdocs-jupyter alone (for the one notebook page) | {r['import mkdocs-jupyter']:.2f} s |",
              f"| &nbsp;&nbsp;of which MkDocs' own work: Markdown and code highlighting, Material's templates, the search index (the rest) | {r['mkdocs build'] - r['import mkdocs']:.2f} s |",
              f"| generator again, same inputs (figures unchanged, copied) | {r['warm build']:.2f} s |",
              f"| not paid by any report: `import matplotlib.pyplot` (every figure is drawn with Pillow) | {r['import pyplot']:.2f} s |",
              f"| not paid by the default reports: `import torchvision` (`--weights imagenet` or a weights file) | {r['import torchvision']:.2f} s |", "",
              "## Site size", "",
              f"The built site is {r['site bytes'] / 1e6:.1f} MB, of which {r['figures']} figures take {r['figure bytes'] / 1e6:.1f} MB "
              f"(256-colour PNG at 110 dpi). Report pages inline {r['data uris']} images as data URIs: every figure is a file, "
              "loaded lazily. (The notebook page embeds its one plot, as notebook outputs are stored inside the .ipynb.)", ""]
    if "plugin" in results:
        lines += plugin_section(results["plugin"])
    if "warm" in results:
        lines += warm_section(results["warm"])
    if "limits" in results:
        lines += limits_section(results["limits"])
    if "training" in results:
        lines += training_section(results["training"])
    if "gpt weights" in results:
        lines += gpt_weights_section(results["gpt weights"])
    if "trace" in results:
        lines += trace_section(results["trace"])
    lines += ["## GPU", "", results["gpu"], ""]
    lines += ["## Where the time goes", "", results["analysis"], ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--only", choices=("warm", "limits", "plugin", "training", "gpt-weights", "trace"), help="measure only this part and replace its section of --out")
    args = parser.parse_args()
    if args.only == "plugin":
        return replace_section(args.out, "\n".join(plugin_section(bench_plugin(3 if args.quick else 5))) + "\n")
    if args.only == "warm":
        return replace_section(args.out, "\n".join(warm_section(bench_warm_regeneration(3 if args.quick else 5))) + "\n")
    if args.only == "limits":
        return replace_section(args.out, "\n".join(limits_section(bench_limits(1 if args.quick else 2))) + "\n")
    if args.only == "training":
        return replace_section(args.out, "\n".join(training_section(bench_training())) + "\n")
    if args.only == "trace":
        return replace_section(args.out, "\n".join(trace_section(bench_trace(3 if args.quick else 9))) + "\n")
    if args.only == "gpt-weights":
        return replace_section(args.out, "\n".join(gpt_weights_section(bench_gpt_weights(1 if args.quick else 3))) + "\n")
    repeats = 5 if args.quick else 15
    tables, targets = model_tables(torch.device("cpu"), repeats)
    if torch.cuda.is_available():
        tables += model_tables(torch.device("cuda"), repeats)[0]
        gpu = f"Measured on {torch.cuda.get_device_name(0)}: see the CUDA table above."
    else:
        gpu = ("No CUDA GPU was visible to this run, so there is no CUDA table. `python -m generator build --device cuda` "
               "runs every report's forward pass on the GPU when one is present; run this benchmark there to add its timings.")
    regeneration = bench_regeneration(2 if args.quick else 3)
    r = regeneration
    own = r["import"] - r["import torch"]  # two separately timed processes: the difference can fall below zero
    own_imports = f"{own:.1f} s" if own >= 0.05 else "nothing measurable"
    analysis = (
        f"What remains of a build from scratch is mostly fixed cost: importing PyTorch ({r['import torch']:.1f} s here; the generator's "
        f"own imports add {own_imports}) and MkDocs, which renders the {r['pages']} Material pages in "
        f"{r['mkdocs build']:.1f} s in a new process ({r['import mkdocs']:.1f} s of it imports, {r['import mkdocs-jupyter']:.1f} s of those "
        "for mkdocs-jupyter, used by one notebook page; the rest is Markdown conversion, the theme templates with their navigation, "
        "and the search index). MkDocs works on one core; the transformer-trace plugin forks a helper process that converts about "
        "half of the pages' Markdown and computes their search entries on the second core, while MkDocs does the rest and renders "
        "every page's template; a result is taken only for input identical to the helper's, so the site is byte for byte what "
        f"MkDocs alone writes ({r['mkdocs alone']:.1f} s without the helper; on a busy machine the second core is not free and the "
        "two times meet). The default reports import neither torchvision (its package initialisation alone imports "
        "torch._dynamo; the ViT's preprocessing is written out, bit-identical, and the ImageNet class names are a data file) nor "
        "matplotlib: heat maps, attention grids, masks, image overlays, tables and small bar panels are colour-mapped arrays and text "
        "composed with Pillow (colour tables copied from matplotlib, DejaVu Sans from its folder), and the GPT's charts (bars, lines, "
        "markers, legends) are antialiased Pillow shapes in matplotlib's look, a few milliseconds each. The GPT's held-out bits per "
        "byte, a property of its weights rather than of the prompt, is measured once per weights (every tensor's bytes, the device, "
        "the thread count and PyTorch's version are its key) and read back from .cache/transformer-trace afterwards; on a fresh "
        "clone it is measured in a thread begun before the reports run, at the lowest priority (the cores the runs and pages leave "
        "idle), on a copy of the weights and with the same thread count (the same float), and waited for only by the GPT's pages, "
        "written after the others; the report templates are then compiled by a child process forked beside the runs. The ViT's 86 M seeded random weights take about two "
        "seconds to draw (PyTorch's CPU generator is sequential), once per process: the serve process keeps the last (size, seed). "
        "Figures are skipped when a content hash of the tensors behind them is unchanged, so regenerating with the same inputs draws "
        "none. Changing only the encoder–decoder's source sentence redraws that report's figures except the mask (a new source "
        "vocabulary size shifts the seeded weights created after the source embedding, so the decoder's tensors change too) and leaves "
        "the ViT report untouched. The report templates are compiled once and kept, as Python keeps its bytecode, in "
        ".cache/transformer-trace (Jinja's bytecode cache: a template whose source changed is compiled again). Absolute times on this shared 2-core machine drift by up to 2× between runs; the load averages "
        "stated with each section say how busy it was."
    )
    results = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "model tables": tables, "targets": targets, "regeneration": regeneration, "gpu": gpu, "analysis": analysis,
               "plugin": bench_plugin(3 if args.quick else 5),
               "warm": bench_warm_regeneration(repeats=3 if args.quick else 5), "limits": bench_limits(1 if args.quick else 2),
               "gpt weights": bench_gpt_weights(1 if args.quick else 3), "training": bench_training(),
               "trace": bench_trace(3 if args.quick else 9)}
    args.out.write_text(page(results) + "\n", encoding="utf-8")
    print(args.out.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
