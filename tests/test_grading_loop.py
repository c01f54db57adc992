"""The README's "Grade a class" loop and the classroom workflow's commands, run as written (read from README.md and
the workflow file, so that a change to either that breaks them fails here), and the folders `trace` makes for them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.test_junit import merged, schema_errors
from transformer_trace.errors import UserError
from transformer_trace.docs_folder.new_folders import check_makeable, make_folders

ROOT = Path(__file__).resolve().parent.parent
VIT = (ROOT / "examples" / "vit_trace.py").read_text(encoding="utf-8")
NO_SCALE = ("k.transpose(-2, -1) / math.sqrt(C // HEADS)", "k.transpose(-2, -1)")


def readme_text(heading: str) -> str:
    """README.md's text under ``heading`` up to its first ```bash block, the lines joined."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(heading):]
    return " ".join(section[:section.index("```bash")].split())


def readme_block(heading: str) -> str:
    """The first ```bash block under ``heading`` of README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(heading):]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def notebook(path: Path, code: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": code, "outputs": [],
                                           "execution_count": None}],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")


def shell(script: str, cwd: Path, bin_dir: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """``script`` run by bash in ``cwd`` with this environment's python first on PATH, as a course's CI would; with
    ``bin_dir``, that python is written there only (a clone's .venv/bin/, which the script must activate)."""
    on_path = bin_dir is None
    bin_dir = bin_dir or cwd / ".bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "python"  # a link would lose the virtual environment (found beside the link)
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}" if on_path else os.environ["PATH"]
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=800,
                          env={**os.environ, "PATH": path, "NO_MKDOCS_2_WARNING": "1", **env})


@pytest.mark.slow
def test_the_readmes_grading_loop_runs_as_written_and_every_student_gets_a_junit_file(tmp_path):
    notebook(tmp_path / "submissions" / "alice" / "model.ipynb", VIT)
    notebook(tmp_path / "submissions" / "bob" / "model.ipynb", VIT.replace(*NO_SCALE))
    notebook(tmp_path / "submissions" / "chloé" / "model.ipynb", "x = 1  # no breakpoint comment\n")
    assert not (tmp_path / "docs").exists()  # the loop's --out docs/students/NAME: its parents are made

    # as in a fresh clone: the project's python is .venv/bin's, on PATH once the README's activation line has run
    activate = re.search(r"run `(\. \.venv/bin/activate)` first", readme_text("## Grade a class"))
    assert activate, "the README says how the loop's python is found in a clone"
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "activate").write_text(f'export PATH="{venv_bin}:$PATH"\n', encoding="utf-8")
    done = shell(f"{activate[1]}\n{readme_block('## Grade a class')}", tmp_path, bin_dir=venv_bin)
    assert done.returncode == 0, done.stderr

    students = tmp_path / "docs" / "students"
    assert (students / "alice" / "report" / "snapshots.json").is_file()
    assert (students / "bob" / "report" / "snapshots.json").is_file()
    assert not (students / "chloé" / "report").exists()
    files = {name: ET.parse(students / name / "junit.xml").getroot() for name in ("alice", "bob", "chloé")}
    class_file = merged(*files.values())
    assert schema_errors(class_file) == []
    assert [suite.get("name") for suite in class_file] == ["alice", "bob", "chloé"]
    assert files["alice"].get("failures") == "0" and files["alice"].get("errors") == "0"
    failure = files["bob"].find(".//failure").get("message")
    assert failure.startswith("first failure (pipeline order): S12 at ") and "model.ipynb" in failure
    error = files["chloé"].find(".//error")
    assert error.get("type") == "bad input" and "no breakpoint comment" in error.get("message")

    data = json.loads((tmp_path / "docs" / "class" / "class.json").read_text(encoding="utf-8"))
    assert (data["totals"]["passed"], data["totals"]["failed"], data["totals"]["no report"]) == (1, 1, 1)
    chloe = next(student for student in data["students"] if student["name"] == "chloé")
    assert chloe["problem"].startswith("the trace was refused: ") and "no breakpoint comment" in chloe["problem"]


@pytest.mark.slow
def test_the_classroom_workflows_trace_and_class_steps_run_as_written(tmp_path):
    jobs = yaml.safe_load((ROOT / "examples" / "classroom-workflow.yml").read_text(encoding="utf-8"))["jobs"]
    trace_step = next(step["run"] for step in jobs["trace"]["steps"] if step.get("name") == "trace")
    class_step = next(step["run"] for step in jobs["class-page"]["steps"]
                      if "transformer_trace class" in step.get("run", ""))
    (tmp_path / "submissions" / "dan").mkdir(parents=True)
    (tmp_path / "submissions" / "dan" / "model.py").write_text(VIT.replace(*NO_SCALE), encoding="utf-8")

    traced = shell(trace_step, tmp_path, STUDENT="dan")
    assert traced.returncode == 1, traced.stderr  # a failed check fails this student's job only
    root = ET.parse(tmp_path / "out" / "dan" / "junit.xml").getroot()
    assert schema_errors(root) == [] and root.find("testsuite").get("name") == "dan"
    case = root.find(".//failure/..")
    assert case.get("file") == "submissions/dan/model.py" and int(case.get("line")) > 0

    (tmp_path / "out").rename(tmp_path / "docs-students")  # the artifacts, downloaded into docs/students
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs-students").rename(tmp_path / "docs" / "students")
    built = shell(class_step, tmp_path)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "docs" / "class" / "index.md").is_file()


# ----------------------------------------------------------------------------- the folders trace makes

def test_missing_parent_folders_are_made_one_at_a_time(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    made = make_folders(Path("docs/students/alice"), "--out")
    assert made == [Path("docs"), Path("docs/students"), Path("docs/students/alice")]
    assert (tmp_path / "docs/students/alice").is_dir()
    assert make_folders(Path("docs/students/alice"), "--out") == []  # there already: nothing made


@pytest.mark.parametrize("case", ["a file on the way", "a dangling link on the way", "a link out of the project"])
def test_folders_are_never_made_over_anything_or_through_a_link_out_of_the_project(tmp_path, tmp_path_factory,
                                                                                  monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    if case == "a file on the way":
        Path("docs").write_text("mine", encoding="utf-8")
    elif case == "a dangling link on the way":
        Path("docs").symlink_to(tmp_path / "nothing-here")
    else:
        Path("docs").symlink_to(elsewhere)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(UserError) as refused:
        make_folders(Path("docs/students/alice"), "--out")
    assert "\n" not in str(refused.value) and "--out" in str(refused.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not list(elsewhere.iterdir())
    if case == "a file on the way":
        assert Path("docs").read_text(encoding="utf-8") == "mine"


def test_a_link_inside_the_project_or_a_path_named_outside_it_is_followed(tmp_path, tmp_path_factory, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real-docs").mkdir()
    Path("docs").symlink_to(tmp_path / "real-docs")
    make_folders(Path("docs/students/alice"), "--out")
    assert (tmp_path / "real-docs/students/alice").is_dir()
    outside = tmp_path_factory.mktemp("outside")
    check_makeable(outside / "a" / "b", "--out")  # named by the user, not reached through a link


def test_a_refused_out_is_refused_before_the_script_runs(tmp_path, capsys, monkeypatch):
    from transformer_trace.cli import main

    monkeypatch.chdir(tmp_path)
    Path("docs").write_text("mine", encoding="utf-8")
    (tmp_path / "model.py").write_text("x = 1  # BREAKPOINT S01\nraise SystemExit('ran')\n", encoding="utf-8")
    assert main(["trace", "model.py", "--out", "docs/students/alice"]) == 2
    err = capsys.readouterr().err
    assert "docs is not a folder" in err and err.count("\n") == 1
