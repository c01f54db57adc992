"""The stated limits hold at the limit, every refusal is a clean user error, and user text cannot smuggle
control characters onto pages or into the terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from PIL import Image

from transformer_trace.reports.encoder_decoder.options import MAX_WORDS
from tests.conftest import ROOT
from tests.test_cli import run_cli, snapshot_of

CONTROL = "\x01\x1b[31m\x7f\u202e"  # SOH, an ANSI escape, DEL, right-to-left override


@pytest.fixture(scope="module")
def ed_docs(tmp_path_factory):
    docs = tmp_path_factory.mktemp("limits") / "docs"
    assert run_cli("build", "--model", "encoder-decoder", "--out", str(docs), "-q").returncode == 0
    return docs


def test_sentences_at_the_512_word_limit_build_with_every_check_passing_and_figures_of_bounded_size(tmp_path):
    src = " ".join(f"s{i}" for i in range(MAX_WORDS))
    tgt = " ".join(f"t{i}" for i in range(MAX_WORDS))
    docs = tmp_path / "docs"
    result = run_cli("build", "--model", "encoder-decoder", "--src", src, "--tgt", tgt, "--out", str(docs), "-q")
    assert result.returncode == 0, result.stderr
    data = json.loads((docs / "encoder-decoder" / "snapshots.json").read_text(encoding="utf-8"))
    assert data["dims"]["S"] == data["dims"]["T"] == MAX_WORDS
    assert all(s["check"]["passed"] for s in data["snapshots"])
    for png in (docs / "encoder-decoder" / "figures").glob("*.png"):
        with Image.open(png) as image:
            assert max(image.size) <= 2600, f"{png.name} is {image.size}: a figure must stay readable, not grow with T²"


def test_one_more_word_than_the_limit_is_refused_in_one_line(ed_docs):
    before = snapshot_of(ed_docs)
    result = run_cli("build", "--model", "encoder-decoder", "--tgt", " ".join(["w"] * (MAX_WORDS + 1)), "--out", str(ed_docs))
    assert result.returncode == 2 and f"has {MAX_WORDS + 1} words, more than the {MAX_WORDS}" in result.stderr
    assert result.stderr.count("\n") == 1 and snapshot_of(ed_docs) == before


@pytest.mark.parametrize("argv, message", [
    (["--d-model", "100000", "--heads", "4"], "would need about"),
    (["--vit-size", "l16", "--model", "vit", "--layer", "30"], "--layer 30 is out of range; this model has blocks 1 to 24"),
    (["--layers", "1", "--layer", "2"], "--layer 2 is out of range; this model has only layer 1"),
    (["--heads", "5"], "--heads 5 must divide --d-model 128"),
])
def test_sizes_that_cannot_work_are_refused_before_allocating(ed_docs, argv, message):
    before = snapshot_of(ed_docs)
    model = [] if "--model" in argv else ["--model", "encoder-decoder"]
    result = run_cli("build", *model, *argv, "--out", str(ed_docs))
    assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert snapshot_of(ed_docs) == before


def test_pdf_without_chromium_is_refused_before_anything_is_written(ed_docs, monkeypatch):
    import transformer_trace.pdf

    monkeypatch.setattr(transformer_trace.pdf.shutil, "which", lambda name: None)
    before = snapshot_of(ed_docs)
    result = run_cli("build", "--model", "encoder-decoder", "--src", "a different sentence", "--pdf", "--out", str(ed_docs))
    assert result.returncode == 2 and "PDF export needs a Chromium browser" in result.stderr
    assert snapshot_of(ed_docs) == before


@pytest.mark.parametrize("make, message", [
    (lambda path: os.mkfifo(path), "is not a regular file"),
    (lambda path: None, "is not a regular file"),  # /dev/zero
])
def test_special_files_as_images_are_named_for_what_they_are(tmp_path, make, message):
    path = tmp_path / "pipe"
    if make(path) is None and not path.exists():
        path = "/dev/zero"
    result = run_cli("build", "--model", "vit", "--vit-size", "tiny", "--image", str(path), "--out", str(tmp_path / "docs"))
    assert result.returncode == 2 and message in result.stderr and "0 bytes" not in result.stderr


def test_control_and_override_characters_never_reach_pages_or_the_terminal(tmp_path):
    docs = tmp_path / "docs"
    command = [sys.executable, "-m", "transformer_trace", "build", "--model", "encoder-decoder", "-q", "--out", str(docs),
               "--src", f"alpha{CONTROL} beta gamma", "--tgt", f"one \u202etwo\x1b three"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == "", "-q must be quiet"
    for page in (docs / "encoder-decoder").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        assert not any(ch in text for ch in "\x01\x1b\x7f\u202e"), page
    inputs = (docs / "encoder-decoder" / "index.md").read_text(encoding="utf-8")
    assert "Characters removed from the sentences" in inputs and "U+202E" in inputs and "U+001B" in inputs
    data = json.loads((docs / "encoder-decoder" / "snapshots.json").read_text(encoding="utf-8"))
    assert data["inputs"]["src"] == "alpha[31m beta gamma" and data["inputs"]["tgt"] == "one two three"


def test_one_word_sentences_read_in_the_singular(tmp_path):
    docs = tmp_path / "docs"
    assert run_cli("build", "--model", "encoder-decoder", "--src", "hello", "--tgt", "world", "--out", str(docs), "-q").returncode == 0
    first = next((docs / "encoder-decoder" / "input").glob("01-*.md")).read_text(encoding="utf-8")
    assert "has **1 word**" in first and "holds 1 integer." in first


def test_the_last_snapshot_keeps_its_sentences_apart(ed_docs):
    page = next((ed_docs / "encoder-decoder" / "output").glob("43-*.md")).read_text(encoding="utf-8")
    assert ").The" not in page and "The largest" in page


def test_pdf_for_another_docs_folder_is_refused_before_anything_is_written(ed_docs):
    before = snapshot_of(ed_docs)
    result = run_cli("build", "--model", "encoder-decoder", "--src", "other words", "--pdf", "--out", str(ed_docs))
    assert result.returncode == 2 and "the PDFs would print another site" in result.stderr and result.stderr.count("\n") == 1
    assert snapshot_of(ed_docs) == before


def test_an_option_of_another_report_is_refused_not_ignored(ed_docs):
    result = run_cli("build", "--model", "vit", "--prompt", "hello", "--out", str(ed_docs))
    assert result.returncode == 2 and "--prompt is an option of the gpt report, not of --model vit" in result.stderr


def test_every_report_folder_is_ignored_by_git():
    from transformer_trace.reports import REPORTS

    folders = [f"docs/{key}/index.md" for key in REPORTS]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *folders], cwd=ROOT, capture_output=True,
                             text=True).stdout.split()
    assert ignored == folders
