"""What the README's commands write inside a clone is ignored by git: `git status` stays clean after a trace (of a
notebook, named after it, with its JUnit file), and every other place the README's examples write is ignored too,
while the hand-written pages of docs/ stay tracked."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def git(clone: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=clone, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A clone of this repository with this working copy's .gitignore."""
    clone = tmp_path_factory.mktemp("clone") / "transformer-trace"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    shutil.copyfile(ROOT / ".gitignore", clone / ".gitignore")
    git(clone, "update-index", "--assume-unchanged", ".gitignore")  # the copy itself is not the README's doing
    return clone


def test_a_trace_leaves_git_status_clean(clone):
    assert git(clone, "status", "--porcelain") == ""
    result = subprocess.run([sys.executable, "-m", "transformer_trace", "trace",
                             "examples/notebooks/vit_steps_seed002.ipynb", "-q", "--junit", "trace-junit.xml"],
                            cwd=clone, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (clone / "docs" / "vit-steps-seed002" / "index.md").is_file() and (clone / "trace-junit.xml").is_file()
    assert git(clone, "status", "--porcelain") == ""


@pytest.mark.parametrize("written", [
    "docs/encoder-decoder-trace/index.md",           # trace examples/encoder_decoder_trace.py
    "docs/my-model/index.md",                        # trace my_model.py: a name of any script
    "site-docs/mine/index.md",                       # trace ... --out site-docs --name mine
    "trace-junit.xml",                               # --junit trace-junit.xml
    "docs/students/alice/report/index.md",           # the grading loop
    "docs/students/alice/junit.xml",
    "docs/class/index.md", "docs/class/class.json",  # transformer_trace class docs/class ...
    "docs/pdf/vit.pdf", "docs/index.md", "docs/vit/index.md", "docs/.generated.json", "docs/.build.lock",
])
def test_every_place_the_readme_writes_is_ignored(clone, written):
    assert git(clone, "check-ignore", "--no-index", written).strip() == written


def test_the_hand_written_pages_stay_tracked(clone):
    assert git(clone, "ls-files", "--cached", "--ignored", "--exclude-standard", "docs") == ""
    assert git(clone, "ls-files", "docs")  # there are some
