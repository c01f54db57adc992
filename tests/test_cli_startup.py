"""Commands that run no model start at once: they import neither PyTorch nor torchvision nor matplotlib (issue 41).

Each command runs in a fresh interpreter with ``-X importtime``, whose report on stderr names every module imported.
`build` and `train` read the reports' flags from the option table (generator/option_table.py, written from the
registry), not from the option dataclasses, whose defaults come from the models' configurations (models/, which import
PyTorch): their help and every refusal made while parsing, or before a model runs (a missing mkdocs.yml or image),
import no PyTorch. `trace` names only the traceable reports' keys, read from the snapshot table: its refusals made
before a script runs (bad arguments, a missing script) import no PyTorch either.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

HEAVY = {"torch", "torchvision", "matplotlib"}


def imported(stderr: str) -> set[str]:
    """The modules an ``-X importtime`` report names."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


# (what it shows, arguments; TMP is a fresh folder, exit status)
COMMANDS = [
    ("version", ["--version"], 0),
    ("help", ["--help"], 0),
    ("new's help", ["new", "--help"], 0),
    ("class's help", ["class", "--help"], 0),
    ("serve's help", ["serve", "--help"], 0),
    ("a new site", ["new", "TMP/site", "--quiet"], 0),
    ("a class page of no student", ["class", "TMP/nobody", "--out", "TMP/class"], 2),
    ("an unknown command", ["frobnicate"], 2),
    ("new without its folder", ["new"], 2),
    ("class without its students", ["class"], 2),
    ("an unknown option of new", ["new", "TMP/x", "--colour", "red"], 2),
    ("what to mark", ["list"], 0),
    ("what to mark in a ViT", ["list", "vit"], 0),
    ("list of an unknown report", ["list", "bert"], 2),
    ("trace without its script", ["trace"], 2),
    ("trace outside a site", ["trace", "TMP/missing.py"], 2),
    ("trace of a missing script", ["trace", "TMP/missing.py", "--out", "TMP/docs", "--junit", "TMP/j.xml"], 2),
    ("trace of a folder", ["trace", "TMP", "--out", "TMP/docs"], 2),
    ("trace of an unknown report", ["trace", "x.py", "--report", "bert"], 2),
    ("build's help", ["build", "--help"], 0),
    ("train's help", ["train", "--help"], 0),
    ("build of an unknown report", ["build", "--model", "nope"], 2),
    ("build with a negative seed", ["build", "--seed", "-1"], 2),
    ("build with an unknown size preset", ["build", "--model", "vit", "--vit-size", "huge"], 2),
    ("build with a missing mkdocs.yml", ["build", "--config", "TMP/missing.yml"], 2),
    ("build outside a site", ["build"], 2),
    ("build of a missing image", ["build", "--model", "vit", "--image", "TMP/missing.jpg", "--out", "TMP/docs"], 2),
    ("train of a report without a recipe", ["train", "vit"], 2),
    ("train with no steps", ["train", "gpt", "--steps", "0"], 2),
]


@pytest.mark.parametrize(("args", "status"), [pytest.param(args, status, id=what) for what, args, status in COMMANDS])
def test_a_command_that_runs_no_model_imports_no_pytorch(args, status, tmp_path):
    args = [arg.replace("TMP", str(tmp_path)) for arg in args]
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "transformer_trace", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == status, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    said = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert len(said) == (1 if status == 2 else 0), said  # a refusal is one line
    assert imported(done.stderr) & HEAVY == set()


def test_the_import_report_is_read():
    """The reader sees a heavy import where there is one (a check that cannot pass vacuously)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import matplotlib"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert "matplotlib" in imported(done.stderr)
    assert "transformer_trace" not in imported(done.stderr)


def test_a_reader_that_leaves_early_gets_no_error_message(tmp_path):
    """`transformer-trace list | head -1`: the pipe closes before the table is written; nothing is said about it."""
    reader = subprocess.Popen([sys.executable, "-m", "transformer_trace", "list"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader.stdout.close()  # as `head` exits: the command's next write meets a closed pipe
    stderr = reader.stderr.read().decode()
    assert reader.wait(timeout=300) != 0
    assert stderr == ""


def test_the_reports_trace_may_name_are_the_traceable_reports_of_the_registry():
    from transformer_trace.reports import REPORTS
    from transformer_trace.snapshot_table import read_table
    from transformer_trace.trace import traceable

    assert list(read_table()) == list(traceable(REPORTS))
