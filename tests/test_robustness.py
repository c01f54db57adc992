"""Regeneration is safe: bad input changes nothing, interruptions lose nothing, output is deterministic,
user text is shown literally everywhere."""

from __future__ import annotations

import hashlib
import html.parser
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from transformer_trace.cli import main
from transformer_trace.progress import Progress
from transformer_trace.reports import REPORTS
from tests.conftest import ROOT, mkdocs_build
from tests.test_cli import run_cli, snapshot_of

HOSTILE_SRC = "<script>alert(1)</script> <img src=x onerror=alert(2)> {{ 7*7 }} a|b `code` $x$ **bold** 日本語 🙂 שלום"
HOSTILE_TGT = "café {% raw %} $$ | ** 東京 end"


@pytest.fixture(scope="module")
def hostile_docs(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("hostile") / "docs"
    assert main(["build", "--model", "encoder-decoder", "--src", HOSTILE_SRC, "--tgt", HOSTILE_TGT, "--out", str(docs), "-q"]) == 0
    return docs


class _Elements(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        (self.scripts if self._in_script else self.text).append(data)


def test_hostile_text_builds_and_injects_no_markup(hostile_docs, tmp_path):
    result = mkdocs_build(hostile_docs, tmp_path / "site")
    assert result.returncode == 0, result.stderr[-2000:]
    for page in ("encoder-decoder/index.html", "encoder-decoder/input/01-raw-input-tokens-ids/index.html", "index.html", "encoder-decoder/questions/index.html"):
        parser = _Elements()
        parser.feed((tmp_path / "site" / page).read_text(encoding="utf-8"))
        assert not any(tag == "img" and "onerror" in attrs for tag, attrs in parser.tags), page
        assert not any("alert" in script for script in parser.scripts), page
        text = "".join(parser.text)
        assert "<script>alert(1)</script>" in text and "{{ 7*7 }}" in text and "**bold**" in text and "$x$" in text, page
        assert "49" not in text.split("{{ 7*7 }}")[0][-5:]  # the Jinja expression was not evaluated
    json_inputs = json.loads((hostile_docs / "encoder-decoder" / "snapshots.json").read_text(encoding="utf-8"))["inputs"]
    assert json_inputs["src"] == HOSTILE_SRC and json_inputs["tgt"] == HOSTILE_TGT


def test_unicode_words_are_kept_in_pages_and_figures(hostile_docs):
    overview = (hostile_docs / "encoder-decoder" / "index.md").read_text(encoding="utf-8")
    for word in ("日本語", "🙂", "שלום", "café", "東京"):
        assert word in overview
    assert (hostile_docs / "encoder-decoder" / "figures" / "tokens.png").stat().st_size > 1000


@pytest.mark.parametrize("word, shown", [
    ("$x$", "$x$"),                # drawn as text, never typeset as math
    ("{{ 7*7 }}", "{{ 7*7 }}"),    # no template is ever rendered from user text
    ("<b>", "<b>"),
    ("שלום", "םולש"),             # right-to-left: put in visual order for left-to-right layout
])
def test_figure_labels_show_user_words_literally(word, shown):
    from transformer_trace.figures import visual_order

    assert visual_order(word) == shown


def test_same_inputs_give_byte_identical_output(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        assert main(["build", "--model", "encoder-decoder", "--out", str(out), "-q"]) == 0
    assert snapshot_of(first) == snapshot_of(second)


def _bomb(path: Path) -> Path:
    Image.new("1", (12_000, 12_000)).save(path)  # 144 M pixels in a small file
    return path


def _truncated(path: Path) -> Path:
    buffer = io.BytesIO()
    Image.new("RGB", (300, 300), (200, 10, 10)).save(buffer, "JPEG")
    path.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    return path


def _postscript(path: Path) -> Path:
    """PostScript, which Pillow would hand to Ghostscript, under a photo's name."""
    path.write_bytes(b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nshowpage\n")
    return path


@pytest.fixture(scope="module")
def vit_site(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("vit") / "docs"
    assert main(["build", "--model", "vit", "--vit-size", "tiny", "--out", str(docs), "-q"]) == 0
    return docs


@pytest.mark.parametrize("make, message", [
    (lambda d: _bomb(d / "bomb.png"), "too large to decode safely"),
    (lambda d: _truncated(d / "cut.jpg"), "may be truncated or corrupt"),
    (lambda d: _postscript(d / "photo.jpg"), "is not a JPEG, PNG, WebP, GIF or BMP image (told from its content"),
])
def test_hostile_images_are_refused_and_the_site_is_untouched(vit_site, tmp_path, make, message):
    before = snapshot_of(vit_site)
    result = run_cli("build", "--model", "vit", "--image", str(make(tmp_path)), "--out", str(vit_site))
    assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1
    assert snapshot_of(vit_site) == before


@pytest.mark.parametrize("args, message", [
    (["--weights", "best"], "--weights 'best' is neither a preset (random, imagenet) nor a file"),
    (["--vit-size", "huge"], "argument --vit-size: invalid choice: 'huge' (choose from 'b16', 'b16-384', 'l16', 'tiny')"),
])
def test_unknown_names_are_refused(vit_site, args, message):
    before = snapshot_of(vit_site)
    result = run_cli("build", "--model", "vit", "--out", str(vit_site), *args)
    assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1
    assert snapshot_of(vit_site) == before


@pytest.mark.parametrize("flags", [[b"--model", b"gpt", b"--prompt", b"caf\xe9 in Latin-1"],
                                   [b"--model", b"encoder-decoder", b"--src", b"ok", b"--tgt", b"\xff\xfe"]], ids=["prompt", "tgt"])
def test_text_that_is_not_utf8_is_refused_in_one_line(tmp_path, flags):
    """Bytes that are not UTF-8 in argv (Python keeps them as lone surrogates) cannot be written to a page."""
    result = subprocess.run([sys.executable.encode(), b"-m", b"transformer_trace", b"build", *flags, b"--out", str(tmp_path / "docs").encode()],
                            cwd=ROOT, capture_output=True, timeout=300)
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2 and err.count("\n") == 1 and "is not valid UTF-8 text" in err, err
    assert not (tmp_path / "docs").exists()


@pytest.mark.parametrize("flag", ["--image", "--weights", "--out"])
def test_a_path_too_long_for_the_file_system_is_refused_in_one_line(tmp_path, flag):
    long = str(tmp_path / ("n" * 5000))
    args = ["--model", "vit", flag, long] + (["--out", str(tmp_path / "docs")] if flag != "--out" else [])
    result = run_cli("build", *args)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "File name too long" in result.stderr, result.stderr
    assert len(result.stderr) < 400  # the path is shortened


def test_unwritable_output_is_refused_in_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = run_cli("build", "--model", "encoder-decoder", "--out", str(blocker / "docs"))
    assert result.returncode == 2 and "cannot write to" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("error, code, message", [(KeyboardInterrupt, 130, "interrupted"), (RuntimeError("disk on fire"), 1, "internal error")])
def test_an_interrupted_or_crashed_run_leaves_the_old_site(tmp_path, monkeypatch, error, code, message):
    docs = tmp_path / "docs"
    assert main(["build", "--model", "encoder-decoder", "--out", str(docs), "-q"]) == 0
    before = snapshot_of(docs)
    calls = []

    def fail_on_third_figure(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise error

    for drawing in {type(fig.drawing) for fig in REPORTS["encoder-decoder"].figures}:
        monkeypatch.setattr(drawing, "draw", fail_on_third_figure)
    result = run_cli("build", "--model", "encoder-decoder", "--src", "a different sentence", "--out", str(docs))
    assert result.returncode == code and message in result.stderr
    assert snapshot_of(docs) == before
    assert not [p for p in docs.iterdir() if p.name.startswith((".staging-", ".trash-"))]


def test_stale_generated_files_go_and_hand_written_ones_stay(tmp_path):
    docs = tmp_path / "docs"
    assert main(["build", "--model", "encoder-decoder", "--out", str(docs), "-q"]) == 0
    (docs / "encoder-decoder" / "encoder" / "99-old-snapshot.md").write_text("stale")  # as if an earlier build wrote it:
    manifest = json.loads((docs / ".generated.json").read_text())  # recorded as generated (a file the user adds is kept)
    manifest["generated"]["encoder-decoder"]["encoder/99-old-snapshot.md"] = hashlib.sha256(b"stale").hexdigest()
    (docs / ".generated.json").write_text(json.dumps(manifest))
    (docs / "my-notes.md").write_text("mine")
    assert main(["build", "--model", "encoder-decoder", "--out", str(docs), "-q"]) == 0
    assert not (docs / "encoder-decoder" / "encoder" / "99-old-snapshot.md").exists()
    assert (docs / "my-notes.md").read_text() == "mine"


def test_a_folder_the_generator_did_not_make_is_never_replaced(tmp_path):
    docs = tmp_path / "docs"
    (docs / "encoder-decoder").mkdir(parents=True)
    (docs / "encoder-decoder" / "mine.md").write_text("mine")
    result = run_cli("build", "--model", "encoder-decoder", "--out", str(docs))
    assert result.returncode == 2 and "was not made by the generator" in result.stderr
    assert (docs / "encoder-decoder" / "mine.md").read_text() == "mine"


def test_progress_bar_on_a_terminal_and_silence_otherwise():
    shown = io.StringIO()
    list(Progress(enabled=True, stream=shown).iterate(range(4), "figures"))
    assert "figures" in shown.getvalue() and "4/4" in shown.getvalue()
    hidden = io.StringIO()  # not a TTY
    list(Progress(stream=hidden).iterate(range(4), "figures"))
    assert hidden.getvalue() == ""


def test_quiet_prints_nothing_and_verbose_logs_each_step(tmp_path):
    quiet = run_cli("build", "--model", "encoder-decoder", "--out", str(tmp_path / "q"), "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    result = subprocess.run([sys.executable, "-m", "transformer_trace", "build", "--model", "encoder-decoder", "--out", str(tmp_path / "v"), "--verbose"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0
    assert "forward pass on cpu recorded" in result.stderr and "43 pages, 43 checks passed" in result.stderr
