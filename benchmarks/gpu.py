"""The Benchmarks page's GPU section: every report's model on CUDA (ours, recording off and on, against the reference),
every report built with `--device cuda` and compared value by value with the same build on the CPU, and the two
example scripts traced with their tensors on the GPU, their verdicts compared with the CPU trace's.

Run where a CUDA GPU is visible: `python benchmarks/run.py --only gpu`. Without one, the section says so."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("encoder_decoder_trace", "vit_trace")
NO_GPU = ("No CUDA GPU was visible to this run, so there is no CUDA table. `python -m transformer_trace build "
          "--device cuda` runs every report's forward pass on the GPU when one is present; run "
          "`benchmarks/run.py --only gpu` there to add its timings.")


def _command(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "transformer_trace", *args], cwd=ROOT, capture_output=True,
                          text=True)
    return time.perf_counter() - start, done


def build_on(device: str, out: Path) -> float:
    """Seconds for `build --device DEVICE` of every report into ``out`` (a new process: imports included)."""
    seconds, done = _command("build", "--out", str(out), "--device", device, "-q")
    if done.returncode:
        raise SystemExit(f"build --device {device} failed: {done.stderr.strip().splitlines()[-1:]}")
    return seconds


def largest_differences(cpu: Path, cuda: Path) -> list[tuple[str, int, float, float]]:
    """Per report: (report, arrays compared, largest |CUDA - CPU|, largest |CPU| value) over every data/ array."""
    rows = []
    for report in sorted(p.name for p in cpu.iterdir() if (p / "data").is_dir()):
        worst, scale, count = 0.0, 0.0, 0
        for array in sorted((cpu / report / "data").glob("*.npy")):
            a, b = np.load(array), np.load(cuda / report / "data" / array.name)
            if a.dtype.kind not in "fc" or a.shape != b.shape:
                assert a.shape == b.shape, (report, array.name)
                continue
            count += 1
            finite = np.isfinite(a) & np.isfinite(b)
            if finite.any():
                worst = max(worst, float(np.abs(a[finite].astype(np.float64) - b[finite]).max()))
                scale = max(scale, float(np.abs(a[finite]).max()))
        rows.append((report, count, worst, scale))
    return rows


def device_of(out: Path, report: str) -> str:
    return json.loads((out / report / "snapshots.json").read_text(encoding="utf-8"))["device"]


def on_cuda(example: str, folder: Path) -> Path:
    """A copy of the example whose tensors are made on the GPU (one line added after `import torch`)."""
    source = (ROOT / "examples" / f"{example}.py").read_text(encoding="utf-8")
    assert source.count("\nimport torch\n") == 1, example
    copy = folder / f"{example}.py"
    copy.write_text(source.replace("\nimport torch\n", "\nimport torch\ntorch.set_default_device('cuda')\n"),
                    encoding="utf-8")
    return copy


def verdict_counts(out: Path) -> dict[str, int]:
    data = json.loads((out / "t" / "snapshots.json").read_text(encoding="utf-8"))
    counts = {"captured": 0, "passed": 0, "failed": 0, "not checkable": 0}
    for snap in data["snapshots"]:
        if snap["captured"]:
            counts["captured"] += 1
            counts[{True: "passed", False: "failed", None: "not checkable"}[snap["check"]["passed"]]] += 1
    return counts


def trace_rows(work: Path) -> list[tuple[str, float, dict, float, dict]]:
    rows = []
    for example in EXAMPLES:
        seconds = {}
        counts = {}
        for device, script in (("cpu", ROOT / "examples" / f"{example}.py"), ("cuda", on_cuda(example, work))):
            out = work / f"trace-{example}-{device}"
            seconds[device], done = _command("trace", str(script), "--out", str(out), "--name", "t", "-q")
            if done.returncode not in (0, 1):
                raise SystemExit(f"trace of {script} failed: {done.stderr.strip().splitlines()[-1:]}")
            counts[device] = verdict_counts(out)
        rows.append((example, seconds["cpu"], counts["cpu"], seconds["cuda"], counts["cuda"]))
    return rows


def gpu_section(model_tables, repeats: int) -> str:
    """The '## GPU' section: measured here if CUDA is visible, else the sentence saying it was not."""
    if not torch.cuda.is_available():
        return "## GPU\n\n" + NO_GPU + "\n\n"
    name = torch.cuda.get_device_name(0)
    lines = ["## GPU", "", f"Measured on {name} (PyTorch {torch.__version__}, CUDA {torch.version.cuda}) by "
             "`benchmarks/run.py --only gpu`. Forward passes are timed between `torch.cuda.synchronize()` calls, "
             "medians of interleaved repeats after warm-up.", ""]
    for title, rows, base in model_tables(torch.device("cuda"), repeats)[0]:
        lines += [f"### {title}", "", "| | time | ratio |", "| --- | ---: | ---: |"]
        lines += [f"| {label} | {t * 1000:.2f} ms | {t / base:.2f}× |" for label, t in rows]
        lines.append("")
    work = Path(tempfile.mkdtemp(prefix="gpu-bench-"))
    try:
        cpu_s, cuda_s = build_on("cpu", work / "cpu"), build_on("cuda", work / "cuda")
        reports = largest_differences(work / "cpu", work / "cuda")
        lines += ["### Every report built on the GPU", "",
                  f"`python -m transformer_trace build --device cuda` (every report, no MkDocs, a new process: "
                  f"imports and CUDA start-up included): {cuda_s:.1f} s; the same build with `--device cpu` on this "
                  f"machine: {cpu_s:.1f} s. Every recorded array of the CUDA build against the CPU build's:", "",
                  "| report | device recorded | arrays compared | largest difference | largest value |",
                  "| --- | --- | ---: | ---: | ---: |"]
        lines += [f"| {report} | {device_of(work / 'cuda', report)} | {count} | {worst:.1e} | {scale:.1e} |"
                  for report, count, worst, scale in reports]
        lines += ["", "### The example scripts traced with their tensors on the GPU", "",
                  "Each example traced as shipped (CPU) and as a copy whose first line after `import torch` is "
                  "`torch.set_default_device('cuda')`: the capture copies GPU tensors to the host, the checks judge "
                  "them alike.", "",
                  "| script | CPU: time · captured / passed / failed / not checkable | "
                  "CUDA: time · captured / passed / failed / not checkable |", "| --- | --- | --- |"]
        for example, cpu_t, cpu_c, cuda_t, cuda_c in trace_rows(work):
            def cell(seconds: float, c: dict) -> str:
                return (f"{seconds:.1f} s · {c['captured']} / {c['passed']} / {c['failed']} / "
                        f"{c['not checkable']}")
            lines.append(f"| `examples/{example}.py` | {cell(cpu_t, cpu_c)} | {cell(cuda_t, cuda_c)} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return "\n".join(lines) + "\n\n"
