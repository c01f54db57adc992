"""The command line: regeneration for any sentence pair, and one-line errors that leave the site alone."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_trace.cli import main
from tests.conftest import ROOT


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_cli(*args: str) -> Result:
    """main() in this process (fast); stdout/stderr captured as a user would see them."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's own exits (--help, usage errors)
            code = exc.code
    return Result(code, out.getvalue(), err.getvalue())


def snapshot_of(docs: Path) -> dict[str, bytes]:
    return {str(p.relative_to(docs)): p.read_bytes() for p in sorted(docs.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built_once(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("cli") / "docs"
    assert main(["build", "--model", "encoder-decoder", "--out", str(docs), "-q"]) == 0
    (docs / "my-notes.md").write_text("hand-written", encoding="utf-8")
    return docs


@pytest.fixture()
def site(built_once, tmp_path) -> Path:
    return Path(shutil.copytree(built_once, tmp_path / "docs"))


def test_regenerating_for_a_seven_word_source_changes_the_shapes(site):
    before = snapshot_of(site)
    assert main(["build", "--model", "encoder-decoder", "--src", "one two three four five six seven", "--tgt", "a b c d", "--out", str(site), "-q"]) == 0
    data = json.loads((site / "encoder-decoder" / "snapshots.json").read_text(encoding="utf-8"))
    shapes = {s["number"]: s["shape"] for s in data["snapshots"]}
    assert shapes[4] == [1, 7, 128] and shapes[10] == [1, 4, 7, 7] and shapes[33] == [1, 4, 4, 7]
    assert (site / "my-notes.md").read_text(encoding="utf-8") == "hand-written"
    assert snapshot_of(site) != before


@pytest.mark.parametrize("args, message", [
    (["--src", "   "], "the src sentence is empty"),
    (["--tgt", ""], "the tgt sentence is empty"),
    (["--src", " ".join(["w"] * 600)], "more than the 512 this model supports"),
    (["--layer", "3"], "--layer 3 is out of range"),
    (["--model", "bert"], "invalid choice: 'bert'"),
    (["--device", "tpu"], "invalid choice: 'tpu'"),
])
def test_bad_input_gets_one_line_exit_2_and_the_site_untouched(site, args, message):
    before = snapshot_of(site)
    result = run_cli("build", "--model", "encoder-decoder", "--out", str(site), *args) if "--model" not in args else run_cli("build", "--out", str(site), *args)
    assert result.returncode == 2
    assert message in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert snapshot_of(site) == before


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.jpg", "image not found"),
    (lambda d: d, "is a folder"),
    (lambda d: (d / "empty.jpg").write_bytes(b"") and d / "empty.jpg" or d / "empty.jpg", "is empty (0 bytes)"),
    (lambda d: (d / "notes.txt").write_text("not an image") and d / "notes.txt" or d / "notes.txt", "is not a JPEG, PNG, WebP, GIF or BMP image"),
])
def test_bad_images_are_refused_in_one_line(site, tmp_path, make, message):
    before = snapshot_of(site)
    result = run_cli("build", "--model", "vit", "--image", str(make(tmp_path)), "--out", str(site))
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert snapshot_of(site) == before


def test_cuda_without_a_gpu_is_refused(site):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    before = snapshot_of(site)
    result = run_cli("build", "--model", "encoder-decoder", "--device", "cuda", "--out", str(site))
    assert result.returncode == 2 and "sees no CUDA GPU" in result.stderr and result.stderr.count("\n") == 1
    assert snapshot_of(site) == before


def test_help_lists_the_options():
    result = subprocess.run([sys.executable, "-m", "transformer_trace", "build", "--help"], capture_output=True, text=True, cwd=ROOT)
    for option in ("--model", "--src", "--tgt", "--image", "--weights", "--seed", "--device", "--quiet", "--verbose"):
        assert option in result.stdout


def test_a_bad_flag_is_blamed_on_the_flag_and_not_on_mkdocs_yml(tmp_path, capsys):
    """mkdocs.yml's GPT options are valid; the prompt typed on the command line is what does not fit."""
    assert main(["build", "--model", "gpt", "--prompt", "x" * 300, "--out", str(tmp_path / "docs"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "the prompt has 300 bytes" in err and "mkdocs.yml" not in err and err.count("\n") == 1


@pytest.mark.parametrize("make", [lambda tmp: tmp / "no-such.yml", lambda tmp: tmp])
def test_a_config_that_is_not_a_file_is_refused_in_one_line(tmp_path, capsys, make):
    config = make(tmp_path)
    assert main(["build", "--model", "gpt", "--config", str(config), "--out", str(tmp_path / "docs"), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"--config {config}" in err and err.count("\n") == 1
    assert not (tmp_path / "docs").exists()


def test_a_build_into_another_folder_says_how_to_serve_that_folder(tmp_path):
    out = tmp_path / "my docs"
    result = run_cli("build", "--model", "encoder-decoder", "--out", str(out))
    assert result.returncode == 0
    assert f"browse with: python -m transformer_trace serve --docs '{out}'" in result.stdout
    assert "mkdocs serve" not in result.stdout  # plain MkDocs would show the project's docs/, not this folder
