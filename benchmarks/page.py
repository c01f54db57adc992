"""The Benchmarks page (docs/benchmarks.md) written from the measurements of benchmarks/run.py: one function per
section."""

from __future__ import annotations

import math
from pathlib import Path

import torch


def plugin_section(p: dict) -> list[str]:
    ratio = p["up to date"] / p["no generation"]
    return ["## `mkdocs build` with the plugin", "",
            "The `transformer-trace` plugin generates the reports `mkdocs.yml` declares when they are missing or their "
            "options changed; otherwise it only compares them with `docs/.generated.json` (no PyTorch import).", "",
            "| build | time | ratio |", "| --- | ---: | ---: |",
            f"| `mkdocs build` on a fresh clone (generates every report, then builds) | {p['fresh clone']:.1f} s | |",
            "| `mkdocs build` without generation (`generate: false`, as the hooks built before the plugin) | "
            f"{p['no generation']:.2f} s | 1.00× |",
            f"| `mkdocs build`, every report up to date | {p['up to date']:.2f} s | {ratio:.2f}× |", "",
            f"Up-to-date build within 1.05× of a build that generates nothing: {'yes' if ratio <= 1.05 else 'no'}.", ""]


def warm_section(w: dict) -> list[str]:
    ratio = w["warm"] / w["cold"]
    return [
        "## Warm regeneration (`python -m transformer_trace serve`)", "",
        f"New encoder–decoder sentences, {w['repeats']} interleaved repeats in one run, medians. Cold: new processes, "
        "as from a "
        "shell. Warm: a regeneration in the serve process (`POST /api/regenerate` without the HTTP), where PyTorch, "
        "the models, "
        "the figure fonts and the MkDocs configuration stay loaded and only the pages whose Markdown changed are "
        "rebuilt, half of "
        "them in a helper process forked for it, while the figures are drawn; the answer comes once the pages a reader "
        "browses "
        "are served, and the report's print view (every snapshot's body again) is rendered right after it, a request "
        "for it "
        "held until it is written.", "",
        "| | time | ratio |", "| --- | ---: | ---: |",
        f"| cold: `python -m transformer_trace build --model encoder-decoder` + `mkdocs build` | {w['cold']:.2f} s | "
        f"1.00× |",
        f"| &nbsp;&nbsp;of which the generator | {w['cold build']:.2f} s | |",
        f"| warm: regenerate in the serve process, until the new pages are served | {w['warm']:.2f} s | {ratio:.2f}× |",
        "| &nbsp;&nbsp;of which the generator (forward pass, pages, figures; meanwhile the changed site pages are "
        f"rendered) | {w['warm generate']:.2f} s | |",
        f"| &nbsp;&nbsp;of which the site update after the swap ({w['pages']:.0f} pages moved in or rebuilt, search "
        f"index rewritten; {', '.join(w['site builds'])} build) | {w['warm site']:.2f} s | |",
        f"| warm, until the print view is written too ({w['later']:.0f} page, every snapshot again, rendered after the "
        f"answer; a request for it waits until then) | {w['warm settled']:.2f} s | |",
        "| warm, without the helper process (`TT_PAGE_HELPER=0`: every changed page rendered in the serve process) | "
        f"{w['warm alone']:.2f} s | {w['warm alone'] / w['cold']:.2f}× |",
        "", "| target | measured | met? |", "| --- | --- | --- |",
        f"| warm regeneration ≤ 0.3× cold build + `mkdocs build` | {ratio:.2f}× | {'yes' if ratio <= 0.3 else 'no'} |",
        f"| warm regeneration ≤ 1.0 s on this machine | {w['warm']:.2f} s | {'yes' if w['warm'] <= 1.0 else 'no'} "
        "|", "",
        f"Starting the server (imports, then a full in-process MkDocs build) took {w['start']:.1f} s, and its first "
        "regeneration "
        f"{w['first']:.2f} s; both are paid once per `make serve`. The figures are Pillow drawings of milliseconds "
        "each; in the "
        "cold column, process start-up and imports are most of the time. "
        f"The machine is shared: its 1-minute load average was {w['load'][0]:.1f} at the start and {w['load'][1]:.1f} "
        "at the end "
        "of this measurement; times and the ratio move with that load, as figures and pages compete with other work "
        "for the "
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


def limits_section(rows: list[tuple[str, float, float]]) -> list[str]:
    lines = ["## At the limits", "",
             "Each report generated (`python -m transformer_trace build --model <report>`, no MkDocs) at its "
             "documented input limit "
             "and with its default input, alternately, medians. Figures stay bounded: long axes are labelled sparsely "
             "and "
             "many positions are sampled evenly, so the time grows with the model's work, not with the pictures.", "",
             "| input | default | at the limit | ratio | ≤ 3×? |", "| --- | ---: | ---: | ---: | --- |"]
    for label, default, limit in rows:
        ratio = limit / default
        lines.append(f"| {label} | {default:.1f} s | {limit:.1f} s | {ratio:.2f}× | {'yes' if ratio <= 3 else 'no'} |")
    return lines + [""]


def training_section(t: dict) -> list[str]:
    r = t["record"]
    c, cfg = r["corpus"], r["training"]
    lines = [
        f"## GPT training (`python -m transformer_trace train {t['key']}`)",
        "",
        f"The default recipe from scratch: {cfg['steps']:,} steps of {cfg['batch']} × {cfg['context']} bytes on "
        f"{cfg['threads']} threads, "
        f"{t['wall']:.0f} s wall-clock for the whole command ({r['seconds']:.0f} s of training and held-out "
        "evaluation, the record's own "
        f"measure, and {r.get('cpu_seconds', float('nan')):.0f} s of CPU time over all threads). Held-out bits "
        f"per byte: **{r['held_out_bits_per_byte']:.3f}**, against {c['bigram_bits_per_byte']:.3f} for the bigram "
        f"baseline and 8 for a uniform guess. Loss curve identical to the bundled checkpoint's record: "
        f"{'yes' if t['same curve'] else 'no'}; checkpoint byte-identical: "
        f"{'yes' if t['same checkpoint'] else 'no'}.",
        "",
        "| target | measured | met? |",
        "| --- | --- | --- |",
        f"| training ≤ 10 minutes on 2 cores | {t['wall'] / 60:.1f} min | {'yes' if t['wall'] <= 600 else 'no'} |",
        "",
        "| step | batch loss (bits per byte, mean of the 50 steps before) | held-out bits per byte |",
        "| ---: | ---: | ---: |",
    ]
    held = {int(step): bits for step, bits in r["held_out_curve"]}
    curve = r["loss_curve"]
    for step in sorted(held):
        window = curve[max(0, step - 50):step]
        lines.append(f"| {step:,} | {sum(window) / len(window) / math.log(2):.3f} | {held[step]:.3f} |")
    return lines + [""]


def gpt_weights_section(rows: list[tuple[str, float]]) -> list[str]:
    base = dict(rows)["random"]
    lines = ["## GPT report: trained vs random weights", "",
             "`python -m transformer_trace build --model gpt --weights trained|random` (no MkDocs), alternately, "
             "medians. Both measure the "
             "held-out bits per byte of their weights and write the same pages; the trained run also loads the "
             "checkpoint.", "",
             "| weights | time | ratio |", "| --- | ---: | ---: |"]
    lines += [f"| {weights} | {t:.1f} s | {t / base:.2f}× |" for weights, t in rows]
    return lines + [""]


def trace_section(rows: list[tuple[str, float, float, float, float]]) -> list[str]:
    lines = ["## Tracing your own script (`python -m transformer_trace trace`)", "",
             "Each bundled example run as `python SCRIPT.py` would run it (in-process, `runpy`) and under the tracer "
             "of the script's own interpreter (here, warm: its start-up is in the whole command's time), interleaved, "
             "medians. No trace function runs: the marked statements are compiled with calls to the tracer, and only "
             "the values and module calls their checks read are copied. "
             "Then the whole command in a new process (imports, the run, the checks, the pages, figures and data/), "
             "alternately "
             "with `python -m transformer_trace build` of the bundled report of the same numbering at the example's "
             "size.", "",
             "| script | plain run | traced run | overhead | ≤ 1.5×? | whole `trace` command | bundled report, same "
             "size |",
             "| --- | ---: | ---: | ---: | --- | ---: | ---: |"]
    for name, plain, traced, whole, bundled in rows:
        ratio = traced / plain
        lines.append(f"| `{name}` | {plain * 1000:.1f} ms | {traced * 1000:.1f} ms | {ratio:.2f}× | "
                     f"{'yes' if ratio <= 1.5 else 'no'} | "
                     f"{whole:.1f} s | {bundled:.1f} s |")
    return lines + [""]


def page(results: dict) -> str:
    """The whole page: the model tables, the targets, the regeneration's steps, then one section per measurement."""
    lines = model_tables_section(results) + targets_section(results) + regeneration_section(results["regeneration"])
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
    if "corpus" in results:
        from benchmarks.corpus import corpus_section

        lines += corpus_section(results["corpus"])
    lines += [results["gpu"].rstrip("\n"), ""]
    lines += ["## Where the time goes", "", results["analysis"], ""]
    return "\n".join(lines)


def model_tables_section(results: dict) -> list[str]:
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
    return lines


def targets_section(results: dict) -> list[str]:
    lines: list[str] = []
    r = results["regeneration"]
    lines += ["## Targets", "", "| target | measured | met? |", "| --- | --- | --- |"]
    lines += [f"| {target} | {measured} | {'yes' if met else 'no'} |" for target, measured, met in results["targets"]]
    lines.append(f"| every report + `mkdocs build` ≤ 10 s, from scratch | {r['cold total']:.1f} s | "
                 f"{'yes' if r['cold total'] <= 10 else 'no'} |")
    lines.append(f"| every report + `mkdocs build` ≤ 10 s, regenerating the same inputs | {r['warm total']:.1f} s | "
                 f"{'yes' if r['warm total'] <= 10 else 'no'} |")
    lines.append("| every report + `mkdocs build` ≤ 10 s, on a fresh clone (the GPT's held-out score not yet "
                 f"measured) | {r['fresh total']:.1f} s | {'yes' if r['fresh total'] <= 10 else 'no'} |")
    for name, seconds in r["steps"].items():
        if name.endswith(": figures"):
            lines.append(f"| {name.removesuffix(': figures')}: figures ≤ 0.5 s, from scratch | {seconds:.2f} s | "
                         f"{'yes' if seconds <= 0.5 else 'no'} |")
    if "warm" in results:
        w = results["warm"]
        lines.append(f"| warm regeneration of new encoder–decoder sentences in `serve` ≤ 1.0 s | {w['warm']:.2f} s | "
                     f"{'yes' if w['warm'] <= 1.0 else 'no'} |")
    lines.append(f"| a new input re-renders only what changed | {'; '.join(r['changed steps'])} | yes |")
    return lines


def regeneration_section(r: dict) -> list[str]:
    lines: list[str] = []
    lines += ["", "## Regeneration, step by step", "",
              f"Every report from scratch, then `mkdocs build`, {r['repeats']} times interleaved with a rebuild from "
              "the same inputs, "
              f"medians. The machine's 1-minute load average was {r['load'][0]:.1f} at the start and "
              f"{r['load'][1]:.1f} at the end.", "",
              "| step | time |", "| --- | ---: |",
              f"| `import torch` (every build needs it) | {r['import torch']:.2f} s |",
              "| `import transformer_trace.build, transformer_trace.reports` (PyTorch included; no torchvision, no "
              "matplotlib) | "
              f"{r['import']:.2f} s |"]
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
                on_fresh = (
                    f": on a fresh clone {thread:.2f} s in a thread begun before the runs, at the lowest "
                    "priority, of which "
                    f"its pages waited {first:.2f} s)"
                    if thread is not None
                    else f": {first:.2f} s on a fresh clone)"
                    if first is not None
                    else ")"
                )
                how = ("read back (measured once per weights" + on_fresh if name.endswith("read back") else "measured")
                lines.append(f"| &nbsp;&nbsp;of which the held-out score, {how} | {value:.2f} s |")
    lines += [f"| generator, total (from scratch, a new process; {r['cold build cpu']:.1f} s of CPU time, figure "
              f"workers included) | {r['cold build']:.2f} s |",
              "| &nbsp;&nbsp;of which start-up, imports and exit (the total less the steps above) | "
              f"{r['cold build'] - stepped:.2f} s |",
              "| generator on a fresh clone (nothing remembered: the held-out score measured beside the runs, the "
              "report templates "
              f"compiled by a child process forked beside them) | {r['fresh build']:.2f} s |",
              f"| `mkdocs build` (a new process; {r['mkdocs build cpu']:.1f} s of CPU time, its helper process "
              "included: a share of the "
              f"pages' Markdown and search entries on the second core) | {r['mkdocs build']:.2f} s |",
              "| &nbsp;&nbsp;the same without the helper process (`TT_PAGE_HELPER=0`: MkDocs alone, one core; "
              f"{r['mkdocs alone cpu']:.1f} s of CPU time) | {r['mkdocs alone']:.2f} s |",
              "| &nbsp;&nbsp;of which importing MkDocs, Material's search and mkdocs-jupyter | "
              f"{r['import mkdocs']:.2f} s |",
              "| &nbsp;&nbsp;&nbsp;&nbsp;of which mkdocs-jupyter alone (for the one notebook page) | "
              f"{r['import mkdocs-jupyter']:.2f} s |",
              "| &nbsp;&nbsp;of which MkDocs' own work: Markdown and code highlighting, Material's templates, the "
              f"search index (the rest) | {r['mkdocs build'] - r['import mkdocs']:.2f} s |",
              f"| generator again, same inputs (figures unchanged, copied) | {r['warm build']:.2f} s |",
              "| not paid by any report: `import matplotlib.pyplot` (every figure is drawn with Pillow) | "
              f"{r['import pyplot']:.2f} s |",
              "| not paid by the default reports: `import torchvision` (`--weights imagenet` or a weights file) | "
              f"{r['import torchvision']:.2f} s |", "",
              "## Site size", "",
              f"The built site is {r['site bytes'] / 1e6:.1f} MB, of which {r['figures']} figures take "
              f"{r['figure bytes'] / 1e6:.1f} MB "
              f"(256-colour PNG at 110 dpi). Report pages inline {r['data uris']} images as data URIs: every figure is "
              "a file, "
              "loaded lazily. (The notebook page embeds its one plot, as notebook outputs are stored inside the "
              ".ipynb.)", ""]
    return lines


def analysis_text(r: dict) -> str:
    """The page's closing section: where the time of a build goes, with this run's numbers."""
    own = r["import"] - r["import torch"]  # two separately timed processes: the difference can fall below zero
    own_imports = f"{own:.1f} s" if own >= 0.05 else "nothing measurable"
    return (
        f"What remains of a build from scratch is mostly fixed cost: importing PyTorch ({r['import torch']:.1f} s "
        "here; the generator's "
        f"own imports add {own_imports}) and MkDocs, which renders the {r['pages']} Material pages in "
        f"{r['mkdocs build']:.1f} s in a new process ({r['import mkdocs']:.1f} s of it imports, "
        f"{r['import mkdocs-jupyter']:.1f} s of those "
        "for mkdocs-jupyter, used by one notebook page; the rest is Markdown conversion, the theme templates with "
        "their navigation, "
        "and the search index). MkDocs works on one core; the transformer-trace plugin forks a helper process that "
        "converts about "
        "half of the pages' Markdown and computes their search entries on the second core, while MkDocs does the rest "
        "and renders "
        "every page's template; a result is taken only for input identical to the helper's, so the site is byte for "
        "byte what "
        f"MkDocs alone writes ({r['mkdocs alone']:.1f} s without the helper; on a busy machine the second core is not "
        "free and the "
        "two times meet). The default reports import neither torchvision (its package initialisation alone imports "
        "torch._dynamo; the ViT's preprocessing is written out, bit-identical, and the ImageNet class names are a data "
        "file) nor "
        "matplotlib: heat maps, attention grids, masks, image overlays, tables and small bar panels are colour-mapped "
        "arrays and text "
        "composed with Pillow (colour tables copied from matplotlib, DejaVu Sans from its folder), and the GPT's "
        "charts (bars, lines, "
        "markers, legends) are antialiased Pillow shapes in matplotlib's look, a few milliseconds each. The GPT's "
        "held-out bits per "
        "byte, a property of its weights rather than of the prompt, is measured once per weights (every tensor's "
        "bytes, the device, "
        "the thread count and PyTorch's version are its key) and read back from .cache/transformer-trace afterwards; "
        "on a fresh "
        "clone it is measured in a thread begun before the reports run, at the lowest priority (the cores the runs and "
        "pages leave "
        "idle), on a copy of the weights and with the same thread count (the same float), and waited for only by the "
        "GPT's pages, "
        "written after the others; the report templates are then compiled by a child process forked beside the runs. "
        "The ViT's 86 M seeded random weights take about two "
        "seconds to draw (PyTorch's CPU generator is sequential), once per process: the serve process keeps the last "
        "(size, seed). "
        "Figures are skipped when a content hash of the tensors behind them is unchanged, so regenerating with the "
        "same inputs draws "
        "none. Changing only the encoder–decoder's source sentence redraws that report's figures except the mask (a "
        "new source "
        "vocabulary size shifts the seeded weights created after the source embedding, so the decoder's tensors change "
        "too) and leaves "
        "the ViT report untouched. The report templates are compiled once and kept, as Python keeps its bytecode, in "
        ".cache/transformer-trace (Jinja's bytecode cache: a template whose source changed is compiled again). "
        "Absolute times on this shared 2-core machine drift by up to 2× between runs; the load averages "
        "stated with each section say how busy it was."
    )
