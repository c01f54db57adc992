"""Benchmarks (not tests): speed of the models and of regeneration, written as a page of the site.

    .venv/bin/python benchmarks/run.py            # writes docs/benchmarks.md
    .venv/bin/python benchmarks/run.py --quick    # fewer repeats
    .venv/bin/python benchmarks/run.py --baseline c36410f    # beside that commit, in one run (benchmarks/compare.py)
    .venv/bin/python benchmarks/run.py --baseline c36410f --only corpus  # the corpus's tracing overhead alone
    .venv/bin/python benchmarks/run.py --baseline c36410f --only corpus-work  # the tracer's work counted

Everything is measured side by side in one run on this machine: ratios matter more than seconds.
"""

from __future__ import annotations

import json
import math
import os
import platform
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

from benchmarks.arguments import arguments  # noqa: E402
from benchmarks.corpus import run_traced, bench_corpus, corpus_section  # noqa: E402
from benchmarks.gpu import gpu_section  # noqa: E402
from benchmarks.measure import (  # noqa: E402
    build_steps, import_seconds, interleaved, log_message, run_timed, run_timed_cpu, scratch_site,
)
from benchmarks.page import (  # noqa: E402
    analysis_text, gpt_weights_section, limits_section, page, plugin_section, replace_section, trace_section,
    training_section, warm_section,
)
from transformer_trace.reports import REPORTS  # noqa: E402


def report_benchmarks() -> dict:
    """Each report's ``benchmark`` (a Benchmark, from generator/reports/<report>/benchmark.py), by report key, for
    those that have one."""
    return {key: report.benchmark for key, report in REPORTS.items() if report.benchmark is not None}


def model_tables(device: torch.device, repeats: int) -> tuple[list, list]:
    """Every report's model tables on ``device`` and, on the CPU, the targets they meet or miss."""
    tables, targets = [], []
    for key, benchmark in report_benchmarks().items():
        own = benchmark.model_tables(REPORTS[key], device, repeats, interleaved)
        tables += own
        if device.type == "cpu" and own:
            targets += benchmark.targets(own)
    return tables, targets


def import_costs(py: str) -> dict[str, float]:
    """What every build pays before any work, and what remains of it: PyTorch, then the generator's own imports;
    what the charts cost before they were drawn with Pillow; MkDocs and its plugins."""
    return {
        "import torch": import_seconds(py, "import torch"),
        "import": import_seconds(py, "import transformer_trace.build, transformer_trace.reports"),
        "import pyplot": import_seconds(py, "import matplotlib.pyplot"),
        "import torchvision": import_seconds(py, "import torchvision"),  # only for --weights imagenet or PATH
        "import mkdocs": import_seconds(py, "import mkdocs.commands.build, material.plugins.search.plugin, "
                                            "mkdocs_jupyter.plugin"),
        "import mkdocs-jupyter": import_seconds(py, "import mkdocs_jupyter.plugin"),
    }


def site_size(site: Path) -> dict[str, int]:
    """The built site's bytes, its figures' count and bytes, its pages, and the images its report pages inline."""
    files = [p for p in site.rglob("*") if p.is_file()]
    figures = [p for p in files if p.suffix == ".png" and "/figures/" in str(p)]
    reports = [p for p in files if p.suffix == ".html" and p.relative_to(site).parts[0] in REPORTS]
    return {"site bytes": sum(p.stat().st_size for p in files), "figure bytes": sum(p.stat().st_size for p in figures),
            "figures": len(figures), "pages": sum(1 for p in files if p.name == "index.html"),
            "data uris": sum(p.read_text(errors="ignore").count("data:image/") for p in reports)}


def bench_regeneration(repeats: int = 3) -> dict:
    """Every report from scratch + `mkdocs build`, and the same again with unchanged inputs, ``repeats`` times
    interleaved (each from-scratch build in a fresh folder), medians; the steps of each build from its log."""
    py = sys.executable
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    out: dict = {"repeats": repeats, "load": [os.getloadavg()[0]]}
    out |= import_costs(py)
    samples: dict[str, list[float]] = {name: [] for name in (
        "fresh build", "cold build", "cold build cpu", "mkdocs build", "mkdocs build cpu", "mkdocs alone",
        "mkdocs alone cpu", "warm build", "warm total")}
    steps: dict[str, list[float]] = {}
    fresh_steps: dict[str, list[float]] = {}
    caches: list[Path] = []
    for _ in range(repeats):
        # A fresh clone first: nothing remembered, so the GPT's held-out score is measured (once per weights)
        # into an empty
        # cache; the build from scratch that follows (a new docs folder) reads it back, whatever the sources' state.
        caches.append(Path(tempfile.mkdtemp(prefix="bench-cache-")))
        env = {**env, "TT_CACHE_DIR": str(caches[-1])}
        work = Path(tempfile.mkdtemp(prefix="bench-"))
        docs, site, config = scratch_site(work)
        fresh, _, log = run_timed_cpu([py, "-m", "transformer_trace", "build", "--out", str(docs), "--verbose"], env)
        samples["fresh build"].append(fresh)
        build_steps(log, fresh_steps)
        shutil.rmtree(work, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix="bench-"))
        docs, site, config = scratch_site(work)
        cold, cold_cpu, log = run_timed_cpu([py, "-m", "transformer_trace", "build", "--out", str(docs), "--verbose"],
                                            env)
        mkdocs_s, mkdocs_cpu, _ = run_timed_cpu([py, "-m", "mkdocs", "build", "-q", "-f", str(config)], env)
        alone_s, alone_cpu, _ = run_timed_cpu(
            [py, "-m", "mkdocs", "build", "-q", "-f", str(config)], {**env, "TT_PAGE_HELPER": "0"}
        )
        warm, _ = run_timed([py, "-m", "transformer_trace", "build", "--out", str(docs)], env)
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
            _, log = run_timed(
                [py, "-m", "transformer_trace", "build", "--model", key, *changed, "--out", str(docs), "--verbose"], env
            )
            out["changed steps"] += [
                log_message(line) for line in log.splitlines() if "figures drawn" in line
            ]
    run_timed([py, "-m", "transformer_trace", "build", "--out", str(docs)], env)
    run_timed([py, "-m", "mkdocs", "build", "-q", "-f", str(config)], env)
    out |= site_size(site)
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
    build_only.write_text("INHERIT: mkdocs.yml\nsite_dir: site-build-only\nplugins:\n  transformer-trace:\n    "
                          "generate: false\n")

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


# ----------------------------------------------------------------------------- warm regeneration (serve)

WARM_SENTENCES = ["purple otters juggle seven bright lanterns", "quiet rivers carry old stories north",
                  "eleven robots paint the morning sky", "brave kites dance over windy hills",
                  "small engines hum beneath wooden floors", "golden bees hunt for sweet clover"]


def bench_warm_regeneration(repeats: int) -> dict:
    """New sentences for the site's first report (the encoder–decoder): a cold CLI build + `mkdocs build` (new
    processes) against a regeneration in the warm `python -m transformer_trace serve` process (its Python API),
    interleaved in one run, medians."""
    from transformer_trace.site.forms import SiteForms
    from transformer_trace.site.server import WarmServer

    report = next(iter(REPORTS))
    sentence = SiteForms.of(REPORTS).by_report[report]["fields"][0]["name"]  # its first form field: the source sentence

    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="bench-warm-"))
    docs, site, config = scratch_site(work, copy=True)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    os.environ["NO_MKDOCS_2_WARNING"] = "1"
    # every report, as a real site
    run_timed([py, "-m", "transformer_trace", "build", "--out", str(docs), "--device", "cpu", "-q"], env)
    out: dict = {"repeats": repeats, "load": [os.getloadavg()[0]]}
    started = time.perf_counter()
    server = WarmServer(docs, config, reports=REPORTS)
    server.prepare()
    out["start"] = time.perf_counter() - started
    started = time.perf_counter()
    server.regenerate({"model": report, sentence: "the very first warm sentence here", "device": "cpu"})
    out["first"] = time.perf_counter() - started
    server.site.settle()
    cold, cold_build, warm, settled, alone, answers = [], [], [], [], [], []
    for i in range(repeats):
        words = WARM_SENTENCES[i % len(WARM_SENTENCES)].split()
        build_s, _ = run_timed([py, "-m", "transformer_trace", "build", "--model", report, f"--{sentence}",
                                " ".join(words[::-1]), "--out", str(docs), "--device", "cpu", "-q"], env)
        mkdocs_s, _ = run_timed([py, "-m", "mkdocs", "build", "-q", "-f", str(config)], env)
        cold.append(build_s + mkdocs_s)
        cold_build.append(build_s)
        started = time.perf_counter()
        answers.append(server.regenerate({"model": report, sentence: " ".join(words), "device": "cpu"}))
        warm.append(time.perf_counter() - started)
        # the print view, rendered after the answer (held until then): nothing overlaps what follows
        server.site.settle()
        settled.append(time.perf_counter() - started)
        # the same without the helper process
        saved, os.environ["TT_PAGE_HELPER"] = os.environ.get("TT_PAGE_HELPER"), "0"
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
        default = [py, "-m", "transformer_trace", "build", "--model", key, "--out", str(work / f"{key}-default"), "-q"]
        at_limit = [py, "-m", "transformer_trace", "build", "--model", key, *flags, "--out", str(work / f"{key}-limit"),
                    "-q"]
        times: dict[str, list[float]] = {"default": [], "limit": []}
        for _ in range(repeats):
            times["default"].append(run_timed(default, env)[0])
            times["limit"].append(run_timed(at_limit, env)[0])
        rows.append(
            (f"{report.short_title}: {label}", statistics.median(times["default"]), statistics.median(times["limit"]))
        )
    shutil.rmtree(work, ignore_errors=True)
    return rows


# ----------------------------------------------------------------------------- GPT training and weights


def bench_training() -> dict:
    """`python -m transformer_trace train gpt` from scratch (the full default recipe), timed; its record against the
    bundled one."""
    from transformer_trace.reports import trainable

    key = trainable()[0]
    recipe = REPORTS[key].training
    CHECKPOINT, load_record, record_path = recipe.checkpoint, recipe.load_record, recipe.record_path
    work = Path(tempfile.mkdtemp(prefix="bench-train-"))
    out = work / CHECKPOINT.name  # torch.save names its archive after the file: same name, same bytes
    seconds, _ = run_timed([sys.executable, "-m", "transformer_trace", "train", key, "--out", str(out), "-q"])
    record = json.loads(record_path(out).read_text(encoding="utf-8"))
    bundled = load_record(CHECKPOINT) or {}
    shutil.rmtree(work, ignore_errors=True)
    return {
        "key": key,
        "wall": seconds,
        "record": record,
        "same curve": record["loss_curve"] == bundled.get("loss_curve"),
        "same checkpoint": record["checkpoint_sha256"] == bundled.get("checkpoint_sha256"),
    }


def bench_gpt_weights(repeats: int) -> list[tuple[str, float]]:
    """The GPT report generated with the trained checkpoint and with random weights, alternately, medians."""
    from transformer_trace.reports import trainable

    key = trainable()[0]
    work = Path(tempfile.mkdtemp(prefix="bench-gpt-weights-"))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    times: dict[str, list[float]] = {"trained": [], "random": []}
    for _ in range(repeats):
        for weights in times:
            cmd = [sys.executable, "-m", "transformer_trace", "build", "--model", key, "--weights", weights, "--out",
                   str(work / weights), "-q"]
            times[weights].append(run_timed(cmd, env)[0])
    shutil.rmtree(work, ignore_errors=True)
    return [(weights, statistics.median(values)) for weights, values in times.items()]


# ----------------------------------------------------------------------------- tracing a user's script


def bench_trace(repeats: int) -> list[tuple[str, float, float, float, float]]:
    """Each bundled example script (examples/*_trace.py) run plainly and under the tracer, interleaved, medians; the
    whole `python -m transformer_trace trace` command (run, checks, pages, figures, data; no MkDocs) in a new process;
    and the bundled report of the same numbering at the example's size (`build`, no MkDocs), alternately with it."""
    import contextlib
    import io
    import runpy

    from transformer_trace.trace import as_traced, choose_numbering, numberings

    from transformer_trace.trace.child import bootstrap
    from transformer_trace.trace.reading.capture import CAPTURE_BUDGET_BYTES, marker_spec
    from transformer_trace.trace.reading.user_files import user_files
    from transformer_trace.trace.markers import scan

    rows = []
    work = Path(tempfile.mkdtemp(prefix="bench-trace-"))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    for script in sorted((ROOT / "examples").glob("*_trace.py")):
        markers = scan(user_files(script), numberings(REPORTS))
        key = choose_numbering("auto", markers, script, REPORTS)
        markers, reads = as_traced(markers, key, REPORTS)  # as `trace` sends them: what the checks read copied

        def plain(script=script):
            saved = sys.argv[:]
            sys.argv = [str(script)]
            try:
                runpy.run_path(str(script), run_name="__main__")
            finally:
                sys.argv = saved

        def traced(script=script, markers=markers, reads=reads):
            # the tracer of the script's own interpreter (generator/trace/child/bootstrap.py), run here: its cost, warm,
            # without the interpreter's start-up, which the whole command's time below includes
            spec = {"script": str(script), "markers": [marker_spec(m, **reads) for m in markers],
                    "cache": str(work / "instrumented")}
            tracer = bootstrap.Tracer(spec, bootstrap.Results(str(work), CAPTURE_BUDGET_BYTES))
            saved = sys.argv[:]
            sys.argv = [str(script)]
            uninstall = tracer.install()
            try:
                run_traced(script, tracer)
            finally:
                uninstall()
                sys.argv = saved

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as benchmarks/corpus.py measures: no worker threads to wait for on a busy machine
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                # milliseconds each: many pairs, a steady median
                t = interleaved({"plain": plain, "traced": traced}, max(40, repeats * 4))
        finally:
            torch.set_num_threads(threads)
        command = [sys.executable, "-m", "transformer_trace", "trace", str(script), "--out", str(work / "trace"), "-q"]
        bundled = [sys.executable, "-m", "transformer_trace", "build", "--model", key, *REPORTS[key].trace.example_size,
                   "--out", str(work / "build"), "-q"]
        times: dict[str, list[float]] = {"trace": [], "build": []}
        for _ in range(max(1, repeats // 3)):
            times["trace"].append(run_timed(command, env)[0])
            times["build"].append(run_timed(bundled, env)[0])
        rows.append(
            (script.name, t["plain"], t["traced"], statistics.median(times["trace"]), statistics.median(times["build"]))
        )
    shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    parser = arguments(__doc__, ROOT)
    args = parser.parse_args()
    # Every process measured runs as a user's interpreter does, its compiled modules kept in __pycache__: where the
    # environment turns that off, each new process would compile the project's ~100 modules again (the generator's
    # and the site plugin's imports), a cost no user pays after their first run.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.only == "corpus-work":  # counted, not timed: benchmarks/corpus_work.py
        from benchmarks.corpus_work import compare_work

        if not args.baseline:
            parser.error("--only corpus-work counts this checkout beside --baseline")
        return replace_section(args.out, compare_work(args.baseline, args.baseline_python, ROOT))
    if args.baseline or args.record:
        from benchmarks.checkout import BaselineCheckout, Checkout
        from benchmarks.compare import compare, section_from_record

        if not args.baseline:
            return replace_section(args.out, section_from_record(json.loads(args.record.read_text())))
        with BaselineCheckout(args.baseline, args.baseline_python) as baseline:
            text = compare(baseline, Checkout.at(ROOT, Path(sys.executable)), args.rounds, args.record,
                           "corpus" if args.only == "corpus" else "all")
        return replace_section(args.out, text)
    if args.only == "plugin":
        return replace_section(args.out, "\n".join(plugin_section(bench_plugin(3 if args.quick else 5))) + "\n")
    if args.only == "warm":
        return replace_section(
            args.out, "\n".join(warm_section(bench_warm_regeneration(3 if args.quick else 5))) + "\n"
        )
    if args.only == "limits":
        return replace_section(args.out, "\n".join(limits_section(bench_limits(1 if args.quick else 2))) + "\n")
    if args.only == "training":
        return replace_section(args.out, "\n".join(training_section(bench_training())) + "\n")
    if args.only == "classroom":
        from classroom import classroom_section  # benchmarks/classroom.py

        return replace_section(args.out, classroom_section(args.quick))
    if args.only == "gpu":
        return replace_section(args.out, gpu_section(model_tables, 5 if args.quick else 15))
    if args.only == "trace":
        return replace_section(args.out, "\n".join(trace_section(bench_trace(3 if args.quick else 9))) + "\n")
    if args.only == "corpus":
        return replace_section(args.out, "\n".join(corpus_section(bench_corpus(5 if args.quick else 15))) + "\n")
    if args.only == "gpt-weights":
        return replace_section(
            args.out, "\n".join(gpt_weights_section(bench_gpt_weights(1 if args.quick else 3))) + "\n"
        )
    repeats = 5 if args.quick else 15
    tables, targets = model_tables(torch.device("cpu"), repeats)
    gpu = gpu_section(model_tables, repeats)
    regeneration = bench_regeneration(2 if args.quick else 3)
    analysis = analysis_text(regeneration)
    results = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "model tables": tables,
        "targets": targets,
        "regeneration": regeneration,
        "gpu": gpu,
        "analysis": analysis,
        "plugin": bench_plugin(3 if args.quick else 5),
        "warm": bench_warm_regeneration(repeats=3 if args.quick else 5),
        "limits": bench_limits(1 if args.quick else 2),
        "gpt weights": bench_gpt_weights(1 if args.quick else 3),
        "training": bench_training(),
        "trace": bench_trace(3 if args.quick else 9),
        "corpus": bench_corpus(5 if args.quick else 15),
    }
    args.out.write_text(page(results) + "\n", encoding="utf-8")
    print(args.out.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()


