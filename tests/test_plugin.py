"""The transformer-trace MkDocs plugin: `mkdocs build` on a fresh clone generates every declared report, an up-to-date
build imports no PyTorch and writes nothing, an option changed in mkdocs.yml regenerates exactly that report, a bad
one stops the build in one line leaving the site as it was, and a foreign MkDocs project gains a report by adding
only the plugin entry (also under `mkdocs serve`, where an edited option regenerates and the served page changes)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import fields
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.docs_folder.configured import PATH_OPTIONS
from transformer_trace.reports import REPORTS
from tests.conftest import ROOT

ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
PLUGIN_KEY = "plugins.transformer-trace.reports"


def mkdocs(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", *args], cwd=cwd, capture_output=True, text=True, env=ENV)


def state(folder: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``folder`` (dot files included): modification time and content digest."""
    return {p.relative_to(folder).as_posix(): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("WARNING") or "warn" in line.lower()]


# ----------------------------------------------------------------------------- this project, as a fresh clone


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """mkdocs.yml and docs/ as a fresh clone has them (what git tracks: no generated report), built once."""
    work = tmp_path_factory.mktemp("clone")
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "mkdocs.yml", "docs"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    for rel in listed:
        if (ROOT / rel).is_file():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, work / rel)
    assert not (work / "docs" / "index.md").exists() and not any((work / "docs" / key).exists() for key in REPORTS)
    return work, mkdocs(work, "build", "--strict")


def assert_built_without_warning(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stderr[-3000:]
    assert not warnings_in(result.stderr), result.stderr


def test_a_fresh_clone_builds_the_landing_page_and_every_report_without_a_warning(clone):
    work, result = clone
    assert_built_without_warning(result)
    site = work / "site"
    assert (site / "index.html").is_file()
    for key in REPORTS:
        assert (site / key / "index.html").is_file() and (site / key / "questions" / "index.html").is_file()
        assert f"generating the {key} report (not generated yet)" in result.stderr
    landing = (site / "index.html").read_text(encoding="utf-8")
    assert not re.search(r"<thead>\s*<tr>\s*(<th[^>]*>\s*</th>\s*)+</tr>", landing), "an empty header row"
    assert "assets/transformer-trace/tt-explorer.js" in landing and (site / "assets" / "transformer-trace" / "tt-report.css").is_file()
    runs = json.loads((work / "docs" / ".generated.json").read_text(encoding="utf-8"))["runs"]
    assert set(runs) == set(REPORTS) and runs["gpt"]["declared"]["options"]["prompt"] == "The cat sat on the mat."


def test_an_up_to_date_build_imports_no_torch_and_writes_nothing_into_docs(clone):
    work, _ = clone
    before = state(work / "docs")
    script = ("import json, sys\nfrom mkdocs.__main__ import cli\n"
              "cli.main(args=['build', '--strict', '-q'], standalone_mode=False)\n"
              "print(json.dumps(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))))")
    result = subprocess.run([sys.executable, "-c", script], cwd=work, capture_output=True, text=True, env=ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.splitlines()[-1]) == []
    assert "generating" not in result.stderr
    assert state(work / "docs") == before


def test_an_option_changed_in_mkdocs_yml_regenerates_exactly_that_report(clone):
    work, _ = clone
    config = work / "mkdocs.yml"
    text = config.read_text(encoding="utf-8")
    assert 'prompt: "The cat sat on the mat."' in text
    others = {key: state(work / "docs" / key) for key in REPORTS if key != "gpt"}
    config.write_text(text.replace('prompt: "The cat sat on the mat."', 'prompt: "A dog ran home."'), encoding="utf-8")
    result = mkdocs(work, "build", "--strict")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "generating the gpt report (its options in mkdocs.yml changed)" in result.stderr
    assert [line for line in result.stderr.splitlines() if "generating the" in line] == [
        line for line in result.stderr.splitlines() if "generating the gpt report" in line]
    assert json.loads((work / "docs" / "gpt" / "snapshots.json").read_text(encoding="utf-8"))["inputs"]["prompt"] == "A dog ran home."
    assert "A dog ran home." in (work / "site" / "gpt" / "index.html").read_text(encoding="utf-8")
    for key, files in others.items():
        assert state(work / "docs" / key) == files, f"{key} was rewritten"


@pytest.mark.parametrize("bad, message", [
    ("generate: 0", "gpt.generate: '0' is not a positive whole number"),
    ("generate: 8, layer: 9", "gpt.layer: --layer 9 is out of range"),
    ("generate: 8, colour: blue", "gpt.colour: unknown option; the gpt report takes"),
])
def test_a_bad_option_stops_the_build_in_one_line_and_leaves_docs_and_site_as_they_were(clone, bad, message):
    work, _ = clone
    config = work / "mkdocs.yml"
    text = config.read_text(encoding="utf-8")
    before_docs, before_site = state(work / "docs"), state(work / "site")
    assert text.count("generate: 8}") == 1
    config.write_text(text.replace("generate: 8}", bad + "}"), encoding="utf-8")
    try:
        result = mkdocs(work, "build", "--strict")
    finally:
        config.write_text(text, encoding="utf-8")
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if PLUGIN_KEY in line]
    assert len(errors) == 1 and f"mkdocs.yml: {PLUGIN_KEY}.{message}" in errors[0], result.stderr
    assert "Traceback" not in result.stderr and "generating the" not in result.stderr
    assert state(work / "docs") == before_docs and state(work / "site") == before_site


# ----------------------------------------------------------------------------- a foreign MkDocs project

FOREIGN = """site_name: A tutorial
theme:
  name: material
nav:
  - Welcome: index.md
  - Chapter 1: guide/chapter-1.md
plugins:
  - search
  - transformer-trace:
      reports:
        gpt: {prompt: "PROMPT", generate: 2}
"""


@pytest.fixture(scope="module")
def foreign(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A tutorial site of its own (Material, its own nav and pages) that adds only the plugin entry."""
    work = tmp_path_factory.mktemp("foreign")
    (work / "docs" / "guide").mkdir(parents=True)
    (work / "docs" / "index.md").write_text("# Welcome\n\nMy tutorial. Its own formula: \\(a^2 + b^2\\).\n", encoding="utf-8")
    (work / "docs" / "guide" / "chapter-1.md").write_text("# Chapter 1\n\nAttention, by hand.\n", encoding="utf-8")
    (work / "mkdocs.yml").write_text(FOREIGN.replace("PROMPT", "Hello, tutorial!"), encoding="utf-8")
    return work, mkdocs(work, "build", "--strict")


def test_a_foreign_project_keeps_its_pages_and_nav_and_gains_the_report(foreign):
    work, result = foreign
    assert_built_without_warning(result)
    site = work / "site"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "My tutorial." in home and (site / "guide" / "chapter-1" / "index.html").is_file()
    assert (work / "docs" / "index.md").read_text(encoding="utf-8").startswith("# Welcome")  # no landing page of ours
    nav = re.findall(r'class="md-nav__link[^"]*"[^>]*>\s*(?:<span class="md-ellipsis">\s*)?([^<]+?)\s*<', home)
    assert nav.index("Welcome") < nav.index("GPT") < nav.index("Chapter 1"), nav
    assert "<math" in home  # the plugin's math (MathML at build time) works on the project's own pages too
    overview = (site / "gpt" / "index.html").read_text(encoding="utf-8")
    assert "Hello, tutorial!" in overview
    for asset in ("tt-explorer.js", "tt-report.css"):
        assert f"assets/transformer-trace/{asset}" in overview and (site / "assets" / "transformer-trace" / asset).is_file()
    assert (site / "gpt" / "data" / "index.json").is_file()  # the explorer's data
    assert set(json.loads((work / "docs" / ".generated.json").read_text(encoding="utf-8"))["generated"]) == {"gpt"}


def test_the_cli_takes_its_defaults_from_mkdocs_yml_and_its_flags_override_them(foreign):
    work, _ = foreign
    docs = work / "docs"
    assert main(["build", "--model", "gpt", "--config", str(work / "mkdocs.yml"), "--out", str(docs), "--generate", "3", "-q"]) == 0
    used = json.loads((docs / ".generated.json").read_text(encoding="utf-8"))["runs"]["gpt"]["options"]
    assert used["prompt"] == "Hello, tutorial!" and used["generate"] == "3"
    assert json.loads((docs / "gpt" / "snapshots.json").read_text(encoding="utf-8"))["inputs"]["prompt"] == "Hello, tutorial!"
    # mkdocs.yml's declaration is unchanged: the plugin keeps what the flags made
    before = state(docs)
    result = mkdocs(work, "build", "--strict")
    assert result.returncode == 0 and "generating" not in result.stderr, result.stderr
    assert state(docs) == before


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    """The page, or "" while the server cannot answer (mkdocs serve holds requests while it rebuilds)."""
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read().decode("utf-8")
    except OSError:
        return ""


def _wait(condition, seconds: float, what: str, log: list[str]) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}:\n" + "\n".join(log[-30:]))


def test_mkdocs_serve_regenerates_an_edited_report_in_one_build_and_outlives_a_bad_option(foreign):
    work, _ = foreign
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mkdocs", "serve", "--dev-addr", f"127.0.0.1:{port}"],
                            cwd=work, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=ENV)
    log: list[str] = []
    threading.Thread(target=lambda: log.extend(iter(proc.stderr.readline, "")), daemon=True).start()
    url = f"http://127.0.0.1:{port}/gpt/"
    config = work / "mkdocs.yml"
    try:
        _wait(lambda: any("Serving on" in line for line in log), 60, "the server", log)
        assert "Hello, tutorial!" in _get(url)
        builds = sum("Building documentation" in line for line in log)
        config.write_text(FOREIGN.replace("PROMPT", "Edited while serving"), encoding="utf-8")
        _wait(lambda: "Edited while serving" in _get(url), 120, "the regenerated page", log)
        assert any("generating the gpt report (its options in mkdocs.yml changed)" in line for line in log)
        time.sleep(8)  # the generator wrote into docs/: those writes are the build's own input, not a change
        assert sum("Building documentation" in line for line in log) == builds + 1, "one change, one build:\n" + \
            "\n".join(log[-30:])
        assert sum("Reloading browsers" in line for line in log) == 1
        assert sum("generating the gpt report" in line for line in log) == 1
        served = state(work / "docs" / "gpt")
        config.write_text(FOREIGN.replace("PROMPT", "Edited while serving").replace("generate: 2", "generate: -1"), encoding="utf-8")
        _wait(lambda: any("reports.gpt.generate" in line for line in log), 60, "the error", log)
        assert sum("reports.gpt.generate" in line for line in log) == 1 and proc.poll() is None
        assert not any("Traceback" in line for line in log)
        assert state(work / "docs" / "gpt") == served
        # MkDocs holds requests while the last build failed; fixed, the previous report is served again, not regenerated
        config.write_text(FOREIGN.replace("PROMPT", "Edited while serving"), encoding="utf-8")
        _wait(lambda: "Edited while serving" in _get(url), 60, "the site again", log)
        assert sum("generating the gpt report" in line for line in log) == 1
    finally:
        proc.terminate()
        proc.wait(30)


def test_path_options_known_without_torch_match_the_report_options():
    """generator/docs_folder/configured.py resolves file options against mkdocs.yml's folder without importing the reports."""
    path_fields = {f.name for report in REPORTS.values() for f in fields(report.options) if f.metadata.get("kind") == "path"}
    assert path_fields <= set(PATH_OPTIONS)
    takes = {f.name for report in REPORTS.values() for f in fields(report.options)}
    assert set(PATH_OPTIONS) <= takes


def test_mkdocs_yml_reads_the_vit_weights_from_the_environment_and_paths_are_relative_to_it(tmp_path, monkeypatch):
    from transformer_trace.docs_folder.configured import declaration, plugin_reports

    monkeypatch.delenv("TT_VIT_WEIGHTS", raising=False)
    assert plugin_reports(ROOT / "mkdocs.yml")["vit"]["weights"] == "random"
    monkeypatch.setenv("TT_VIT_WEIGHTS", "imagenet")
    assert plugin_reports(ROOT / "mkdocs.yml")["vit"]["weights"] == "imagenet"
    (tmp_path / "ckpt.pth").write_bytes(b"12345")
    declared = declaration({"weights": "ckpt.pth", "image": "missing.jpg", "seed": 3}, tmp_path)
    assert declared["options"] == {"weights": str(tmp_path / "ckpt.pth"), "image": str(tmp_path / "missing.jpg"), "seed": 3}
    assert declared["files"]["weights"][0] == 5 and declared["files"]["image"] is None
    assert declaration({"weights": "random"}, tmp_path) == {"options": {"weights": "random"}, "files": {}}


@pytest.mark.parametrize("entry", ['[prompt, "x"]', "5", '"ab"'])
def test_report_options_that_are_not_a_mapping_stop_the_build_in_one_line(clone, entry):
    work, _ = clone
    config = work / "mkdocs.yml"
    text = config.read_text(encoding="utf-8")
    before_docs = state(work / "docs")
    line = next(line for line in text.splitlines() if line.strip().startswith("gpt: {"))
    config.write_text(text.replace(line, line.split("gpt:")[0] + "gpt: " + entry), encoding="utf-8")
    try:
        result = mkdocs(work, "build", "--strict")
    finally:
        config.write_text(text, encoding="utf-8")
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if PLUGIN_KEY in line]
    assert len(errors) == 1 and f"mkdocs.yml: {PLUGIN_KEY}.gpt: expected the report's options as a mapping" in errors[0], result.stderr
    assert state(work / "docs") == before_docs
