"""Classroom benchmark: a class of generated students traced on one machine, then its class page built.

Each student is a copy of a bundled example (examples/encoder_decoder_trace.py or examples/vit_trace.py) with its own
seed and, for most, one planted bug (the bugs of tests/test_classroom.py), traced in this process as `python -m
transformer_trace trace` would (the interpreter and PyTorch imported once, as a grading machine's long-lived worker
would); then `python -m transformer_trace class` builds the page in a new process. Reports the time per student, the
whole class's time, the peak resident memory of the tracing process, and the class page's time (the bound is 10 s).
`python benchmarks/run.py --only classroom [--quick]` replaces its section of docs/benchmarks.md."""

from __future__ import annotations

import contextlib
import io
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SEED_LINES = {"encoder_decoder_trace.py": "torch.manual_seed(7)", "vit_trace.py": "torch.manual_seed(0)"}
PLANTED = {  # bug -> (example, text replaced, replacement); None: correct
    "correct (encoder-decoder)": ("encoder_decoder_trace.py", None, None),
    "correct (ViT)": ("vit_trace.py", None, None),
    "softmax over the wrong axis": ("encoder_decoder_trace.py", "torch.softmax(scores_pre_mask, dim=-1)",
                                    "torch.softmax(scores_pre_mask, dim=-2)"),
    "missing 1/√d": ("vit_trace.py", "k.transpose(-2, -1) / math.sqrt(C // HEADS)", "k.transpose(-2, -1)"),
    "mask sees the next position": ("encoder_decoder_trace.py", 'float("-inf")), diagonal=1)',
                                    'float("-inf")), diagonal=2)'),
    "residual dropped": ("vit_trace.py", "x_after_attn = x_in + attn_out", "x_after_attn = attn_out"),
    "heads merged without moving the heads axis back": ("encoder_decoder_trace.py",
                                                        "return x.transpose(1, 2).reshape(B, L, h * hs)",
                                                        "return x.reshape(B, L, h * hs)"),
    "positions added twice": ("encoder_decoder_trace.py", "src_with_pos = src_embed + positional_encoding(S, D_MODEL)",
                              "src_with_pos = src_embed + 2 * positional_encoding(S, D_MODEL)"),
}


def student_script(i: int, folder: Path) -> Path:
    """Student i's script: an example with the student's own seed and the i-th planted bug (or none)."""
    example, old, new = list(PLANTED.values())[i % len(PLANTED)]
    source = (EXAMPLES / example).read_text(encoding="utf-8")
    source = source.replace(SEED_LINES[example], f"torch.manual_seed({100 + i})")
    if old is not None:
        source = source.replace(old, new)
    script = folder / f"student-{i:03d}" / example
    script.parent.mkdir(parents=True)
    script.write_text(source, encoding="utf-8")
    return script


def bench_classroom(students: int = 100) -> dict:
    from transformer_trace.cli import main

    work = Path(tempfile.mkdtemp(prefix="bench-classroom-"))
    try:
        scripts = [student_script(i, work / "scripts") for i in range(students)]
        codes = []
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        for script in scripts:
            out = work / "docs" / "students" / script.parent.name
            out.mkdir(parents=True)  # the JUnit file's folder
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                codes.append(main(["trace", str(script), "--out", str(out), "--name", "report", "-q",
                                   "--junit", str(out / "junit.xml")]))
        traced = time.perf_counter() - started
        now = resource.getrusage(resource.RUSAGE_SELF)
        traced_cpu = now.ru_utime + now.ru_stime - cpu.ru_utime - cpu.ru_stime
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        folders = sorted(str(p) for p in (work / "docs" / "students").iterdir())
        page = _class_page(work, folders)
        return {"students": students, "traced": traced, "traced_cpu": traced_cpu, "peak_mib": peak, **page,
                "exit": {code: codes.count(code) for code in sorted(set(codes))}, "bugs": len(PLANTED) - 2}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _class_page(work: Path, folders: list[str]) -> dict[str, float]:
    """The class page built in this process (reading every report, writing the page), then the whole command in a new
    process: its wall time and CPU time (the imports included; on a busy machine the wall time waits for a core)."""
    from transformer_trace.classroom.page import write_class
    from transformer_trace.classroom.students import read_students

    started = time.perf_counter()
    write_class(work / "docs" / "class", work / "staged", read_students([Path(f) for f in folders]), "Class report")
    built = time.perf_counter() - started
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "transformer_trace", "class", str(work / "docs" / "class"), *folders, "-q"],
                   check=True, env=env)
    command = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"page": built, "command": command, "command_cpu": cpu}


def classroom_section(quick: bool = False) -> str:
    found = bench_classroom(20 if quick else 100)
    n = found["students"]
    return "\n".join([
        "## A class of students (`trace` for each, then `python -m transformer_trace class`)", "",
        f"{n} generated students (copies of the two bundled example scripts, each with its own seed; {found['bugs']} "
        "planted bugs and the correct code in turn), each traced with `--junit` in one process, one after another; "
        "then "
        "the class page built from their reports by `python -m transformer_trace class` in a new process (its imports "
        "included). Exit statuses: "
        + ", ".join(f"{count} × {code}" for code, count in found["exit"].items()) + ".", "",
        "| students | tracing, whole class (wall · CPU) | per student (wall) | peak memory of the tracing "
        "process | class page built (≤ 10 s?) | `python -m transformer_trace class`, wall · CPU |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {n} | {found['traced']:.1f} s · {found['traced_cpu']:.1f} s | {found['traced'] / n:.2f} s | "
        f"{found['peak_mib']:.0f} MiB | {found['page']:.2f} s ({'yes' if found['page'] < 10 else 'no'}) | "
        f"{found['command']:.1f} s · {found['command_cpu']:.1f} s |", "",
        "The command's time beyond the build is its imports (the command line imports the report registry and "
        "PyTorch).",
        f"Load average when it finished: {', '.join(f'{x:.1f}' for x in os.getloadavg())}.", ""])
