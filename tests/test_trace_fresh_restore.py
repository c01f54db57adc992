"""tests/trace_fresh/restore.py puts a fresh round's upstream files back beside ours, marked as the round marked them,
from a git directory holding the commit its upstream.json names — checked on a tiny repository made here (no network);
and every committed round folder's upstream.json gives each file its markers.json marks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.trace_fresh.restore import main, marked

FRESH = Path(__file__).resolve().parent / "trace_fresh"
ROUND_FOLDERS = sorted(path.parent for path in FRESH.glob("round*/*/markers.json"))

MODEL = (
    "import torch\n"
    "\n"
    "def attend(q, k):\n"
    "    scores = q @ k.transpose(-2, -1)  # (B, T, T)\n"
    "    return scores.softmax(-1)\n"
)
CRLF_MODEL = "def residual(x, y):\r\n    out = x + y\r\n    return out\r\n"
NOTEBOOK = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# a tutorial\n"]},
                      {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
                       "source": ["def head(x):\n", "    return x[:, 0]  # the class token\n", "\n", "head(x)"]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def upstream(tmp_path: Path) -> tuple[Path, str]:
    """A repository of two model files and a notebook, committed once: (its git directory, the commit)."""
    repo = tmp_path / "upstream"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "model.py").write_text(MODEL)
    (repo / "src" / "layers.py").write_bytes(CRLF_MODEL.encode())
    (repo / "tutorial.ipynb").write_text(json.dumps(NOTEBOOK, indent=1))
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "upstream", cwd=repo)
    return repo / ".git", git("rev-parse", "HEAD", cwd=repo)


def our_folder(tmp_path: Path, commit: str, markers: list[dict], **spec: object) -> Path:
    folder = tmp_path / "round9" / "someone_model"
    folder.mkdir(parents=True)
    (folder / "SOURCE.md").write_text("# someone_model\n")
    (folder / "driver.py").write_text("from model import attend  # ours\n")
    (folder / "planted_bugs.json").write_text("[]\n")
    (folder / "markers.json").write_text(json.dumps(markers))
    (folder / "upstream.json").write_text(json.dumps({"repository": "someone/model", "commit": commit, **spec}))
    return folder


def test_upstream_files_come_back_beside_ours_with_the_markers_appended(tmp_path, upstream):
    git_dir, commit = upstream
    folder = our_folder(tmp_path, commit, [
        {"file": "model.py", "line": 3, "comment": "# BREAKPOINT G05 q"},
        {"file": "model.py", "line": 5, "comment": "# BREAKPOINT G14"},
        {"file": "layers.py", "line": 2, "comment": "# BREAKPOINT G18"}],
        files={"model.py": "src/model.py", "layers.py": "src/layers.py"})
    dest = tmp_path / "restored"
    assert main([str(folder), "--from", str(git_dir), "--to", str(dest)]) == 0
    assert (dest / "model.py").read_text() == MODEL.replace(
        "def attend(q, k):", "def attend(q, k):  # BREAKPOINT G05 q").replace(
        "scores.softmax(-1)", "scores.softmax(-1)  # BREAKPOINT G14")
    assert (dest / "layers.py").read_bytes() == CRLF_MODEL.replace(
        "out = x + y\r\n", "out = x + y  # BREAKPOINT G18\r\n").encode(), "line endings kept"
    assert {p.name for p in dest.iterdir()} == {"SOURCE.md", "driver.py", "planted_bugs.json", "markers.json",
                                                "upstream.json", "model.py", "layers.py"}


@pytest.mark.parametrize(("placement", "expected"), [
    ({}, "    scores = q @ k.transpose(-2, -1)  # BREAKPOINT G11  # (B, T, T)\n"),
    ({"placement": "after_comment"}, "    scores = q @ k.transpose(-2, -1)  # (B, T, T)  # BREAKPOINT G11\n")])
def test_a_marker_goes_before_upstreams_own_comment_unless_it_says_after(placement, expected):
    text = marked(MODEL, [{"file": "model.py", "line": 4, "comment": "# BREAKPOINT G11", **placement}], "model.py")
    assert text.splitlines(keepends=True)[3] == expected
    assert text.replace(expected, "") == MODEL.replace("    scores = q @ k.transpose(-2, -1)  # (B, T, T)\n", "")


def test_two_markers_on_one_line_are_joined_in_their_order():
    text = marked("x = a  # note\n", [{"line": 1, "comment": "# BREAKPOINT G13"},
                                      {"line": 1, "comment": "# BREAKPOINT G12 mask"}], "f.py")
    assert text == "x = a  # BREAKPOINT G13  # BREAKPOINT G12 mask  # note\n"


def test_a_hash_inside_a_string_is_no_comment():
    assert marked('s = "a # b"\n', [{"line": 1, "comment": "# trace: s"}], "f.py") == 's = "a # b"  # trace: s\n'


def test_a_notebook_is_rebuilt_from_upstream_cells_and_ours(tmp_path, upstream):
    git_dir, commit = upstream
    folder = our_folder(tmp_path, commit, [
        {"file": "driver.ipynb", "cell": 1, "line": 2, "upstream": True, "upstream_cell": 1,
         "comment": "# BREAKPOINT S24"},
        {"file": "driver.ipynb", "cell": 2, "line": 1, "upstream": False, "comment": "# BREAKPOINT S26"}],
        notebook={"file": "driver.ipynb", "from": "tutorial.ipynb",
                  "cells": [{"ours": 0}, {"upstream_cell": 1, "drop_last_lines": 1}, {"ours": 2}]})
    (folder / "our_cells.json").write_text(json.dumps([{"cell": 0, "source": "import torch"},
                                                       {"cell": 2, "source": "p = head(x)  # BREAKPOINT S26"}]))
    dest = tmp_path / "restored"
    assert main([str(folder), "--from", str(git_dir), "--to", str(dest)]) == 0
    cells = json.loads((dest / "driver.ipynb").read_text())["cells"]
    assert [cell["source"] for cell in cells] == [
        "import torch", "def head(x):\n    return x[:, 0]  # BREAKPOINT S24  # the class token",
        "p = head(x)  # BREAKPOINT S26"]


def test_a_whole_notebook_keeps_every_byte_but_the_markers(tmp_path, upstream):
    git_dir, _ = upstream
    repo = tmp_path / "upstream"
    (repo / "tutorial.ipynb").write_text(json.dumps(NOTEBOOK, indent=1, ensure_ascii=False) + "\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "saved by Jupyter", cwd=repo)
    commit = git("rev-parse", "HEAD", cwd=repo)
    folder = our_folder(tmp_path, commit, [{"file": "driver.ipynb", "cell": 1, "line": 4, "comment": "# trace: h"}],
                        notebook={"file": "driver.ipynb", "from": "tutorial.ipynb", "whole": True})
    dest = tmp_path / "restored"
    assert main([str(folder), "--from", str(git_dir), "--to", str(dest)]) == 0
    original = (repo / "tutorial.ipynb").read_text()
    assert (dest / "driver.ipynb").read_text() == original.replace('"head(x)"', '"head(x)  # trace: h"')


def test_a_commit_the_git_directory_lacks_is_one_line_and_leaves_the_destination_alone(tmp_path, upstream, capsys):
    git_dir, _ = upstream
    folder = our_folder(tmp_path, "0" * 40, [], files={"model.py": "src/model.py"})
    dest = tmp_path / "restored"
    dest.mkdir()
    (dest / "kept").write_text("")
    assert main([str(folder), "--from", str(git_dir), "--to", str(dest)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("restore: someone_model: ") and error.count("\n") == 1
    assert [p.name for p in dest.iterdir()] == ["kept"] and not dest.with_name("restored.partial").exists()


@pytest.mark.parametrize("folder", ROUND_FOLDERS, ids=lambda folder: f"{folder.parent.name}/{folder.name}")
def test_every_round_folder_says_where_each_marked_file_comes_from(folder: Path):
    spec = json.loads((folder / "upstream.json").read_text(encoding="utf-8"))
    assert spec["repository"].count("/") == 1 and len(spec["commit"]) == 40, spec
    assert spec["commit"] in (folder / "SOURCE.md").read_text(encoding="utf-8"), "the commit SOURCE.md names"
    ours = {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}
    given = set(spec.get("files", {})) | ({spec["notebook"]["file"]} if "notebook" in spec else set())
    marked_files = {marker["file"] for marker in json.loads((folder / "markers.json").read_text(encoding="utf-8"))}
    assert marked_files <= given | ours
    assert not given & ours, "an upstream file is never committed beside ours"
