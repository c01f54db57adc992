"""The folder a trace takes in docs/ (issue 32, point 2): never a name the site uses (a bundled report, the PDFs,
MkDocs' own outputs, a home page), never a folder of the user's or another script's trace, and never one shared by
two scripts whose names have no ASCII letter; refused in one line before the script runs, nothing replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.trace.naming import FILE_SUFFIXES, NAME, default_name, reserved_names

SCRIPT = "import torch\nfrom pathlib import Path\nPath(__file__).with_name('ran').write_text('yes')\n" \
         "x = torch.ones(2, 3)  # trace: x\n"


def script(folder: Path, name: str = "model.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def ran(path: Path) -> bool:
    return path.with_name("ran").exists()


@pytest.mark.parametrize("name", ["pdf", "print", "assets", "search", "404.html", "sitemap.xml", "sitemap.xml.gz",
                                  "stylesheets", "javascripts", "gpt", "encoder-decoder", "index.md", "readme.md"])
def test_a_name_the_site_uses_is_refused_before_the_script_runs(tmp_path, capsys, name):
    code = script(tmp_path / "src")
    assert main(["trace", str(code), "--out", str(tmp_path / "docs"), "--name", name]) == 2
    assert error(capsys).startswith(f"error: --name {name!r}")
    assert not ran(code) and not (tmp_path / "docs").exists()


def test_a_script_named_like_a_site_folder_is_refused_naming_its_file_not_a_name_never_given(tmp_path, capsys):
    code = script(tmp_path / "src", "pdf.py")
    docs = tmp_path / "docs"
    (docs / "pdf").mkdir(parents=True)
    (docs / "pdf" / "gpt.pdf").write_bytes(b"%PDF")
    assert main(["trace", str(code), "--out", str(docs)]) == 2
    message = error(capsys)
    assert "'pdf' (from the file name 'pdf.py'; choose one with --name)" in message and "--name 'pdf'" not in message
    assert (docs / "pdf" / "gpt.pdf").read_bytes() == b"%PDF" and not ran(code)


def test_scripts_whose_names_have_no_ascii_letter_get_names_of_their_own():
    names = {default_name(Path(f"{stem}.py")) for stem in ("模型", "数据", "модель", "نموذج", "🙂")}
    assert len(names) == 5 and all(NAME.fullmatch(n) and n.startswith("trace-") for n in names)
    assert default_name(Path("Café Model.py")) == "cafe-model"


def test_every_reserved_name_is_one_a_name_could_otherwise_take_or_ends_like_a_file():
    assert all(NAME.fullmatch(n) or n.endswith(FILE_SUFFIXES) for n in reserved_names(REPORTS) if n.islower())


def test_a_name_held_by_another_scripts_trace_or_by_the_user_is_refused_and_the_same_script_retraces(tmp_path, capsys):
    docs = tmp_path / "docs"
    first, second = script(tmp_path / "a"), script(tmp_path / "b")
    assert main(["trace", str(first), "--out", str(docs), "--name", "t", "-q"]) == 0
    before = (docs / "t" / "snapshots.json").read_bytes()
    first.with_name("ran").unlink()
    assert main(["trace", str(second), "--out", str(docs), "--name", "t", "-q"]) == 2
    assert f"holds the trace of {first}" in error(capsys) and not ran(second)
    assert (docs / "t" / "snapshots.json").read_bytes() == before
    assert main(["trace", str(first), "--out", str(docs), "-q"]) == 0  # its default name: model
    assert main(["trace", str(second), "--out", str(docs), "-q"]) == 2  # the same default name
    assert "holds the trace of" in error(capsys)
    assert main(["trace", str(first), "--out", str(docs), "--name", "t", "-q"]) == 0 and ran(first)  # its own: fine
    (docs / "mine").mkdir()
    (docs / "mine" / "notes.md").write_text("# mine\n", encoding="utf-8")
    assert main(["trace", str(second), "--out", str(docs), "--name", "mine", "-q"]) == 2
    assert "files of yours" in error(capsys) and not ran(second)


def test_an_out_that_cannot_be_written_is_refused_before_the_script_runs(tmp_path, capsys):
    code = script(tmp_path / "src")
    (tmp_path / "a-file").write_text("mine\n", encoding="utf-8")  # missing folders are made, never over a file
    assert main(["trace", str(code), "--out", str(tmp_path / "a-file" / "docs")]) == 2
    assert "a-file" in error(capsys) and not ran(code)
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "mine\n"


def test_a_hand_edited_trace_is_refused_without_offering_a_force_trace_does_not_take(tmp_path, capsys):
    code, docs = script(tmp_path / "src"), tmp_path / "docs"
    assert main(["trace", str(code), "--out", str(docs), "--name", "t", "-q"]) == 0
    page = next((docs / "t").rglob("*.md"))
    page.write_text("my edit\n", encoding="utf-8")
    assert main(["trace", str(code), "--out", str(docs), "--name", "t", "-q"]) == 2
    message = error(capsys)
    assert "edited by hand" in message and "--force" not in message
    assert page.read_text(encoding="utf-8") == "my edit\n"
    assert json.loads((docs / ".generated.json").read_text(encoding="utf-8"))["runs"]["t"]["trace_of"] == str(code)


@pytest.mark.parametrize("page", ["model.md", "model.markdown", "model.ipynb"])
def test_a_name_whose_address_a_page_of_the_users_has_is_refused_before_the_script_runs(tmp_path, capsys, page):
    code = script(tmp_path / "src")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / page).write_text("# mine\n", encoding="utf-8")
    assert main(["trace", str(code), "--out", str(tmp_path / "docs")]) == 2
    assert f"your page {tmp_path / 'docs' / page} has the address model/" in error(capsys)
    assert not ran(code) and sorted(p.name for p in (tmp_path / "docs").iterdir()) == [page]


def test_a_name_another_trace_took_while_the_script_ran_is_refused_not_replaced(tmp_path, capsys, monkeypatch):
    from transformer_trace.trace.reading import capture

    first, other = script(tmp_path / "a"), script(tmp_path / "b")
    docs = tmp_path / "docs"
    real_run = capture.run_script

    def run_while_another_trace_takes_the_name(*args, **kwargs):
        monkeypatch.setattr(capture, "run_script", real_run)
        assert main(["trace", str(other), "--out", str(docs), "--name", "same", "-q"]) == 0
        return real_run(*args, **kwargs)

    monkeypatch.setattr(capture, "run_script", run_while_another_trace_takes_the_name)
    assert main(["trace", str(first), "--out", str(docs), "--name", "same", "-q"]) == 2
    assert f"holds the trace of {other}" in error(capsys)
    assert json.loads((docs / "same" / "snapshots.json").read_text(encoding="utf-8"))["traced"] is True
    assert sorted(p.name for p in docs.iterdir()) == [".generated.json", "same"]
    assert json.loads((docs / ".generated.json").read_text(encoding="utf-8"))["runs"]["same"] == {"trace_of": str(other)}
