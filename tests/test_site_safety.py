"""Regeneration never loses the user's work: their files survive, hand edits stop the build, one build at a time,
and interrupted or killed builds leave nothing that the next build does not clean up.

docs/ is compared by the sha256 of every file before and after.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

import transformer_trace.docs_folder.staging
from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.docs_folder.staging import LOCK, MANIFEST, staged_output
from tests.conftest import ROOT
from tests.test_cli import run_cli

LEFTOVERS = (".staging-", ".trash-", LOCK)


def digests(docs: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """sha256 of every file in ``docs`` (links by target), leaving out top-level names starting with ``skip``."""
    found = {}
    for path in sorted(docs.rglob("*")):
        rel = path.relative_to(docs)
        if skip and rel.parts[0].startswith(skip):
            continue
        if path.is_symlink():
            found[rel.as_posix()] = "link:" + os.readlink(path)
        elif path.is_file():
            found[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def leftovers(docs: Path) -> list[str]:
    return sorted(p.name for p in docs.iterdir() if p.name.startswith(LEFTOVERS))


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "transformer_trace", "build", "--model", "encoder-decoder", *args]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The encoder-decoder report built once with the default inputs; tests work on copies."""
    docs = tmp_path_factory.mktemp("reference") / "docs"
    assert main(["build", "--model", "encoder-decoder", "--out", str(docs), "-q"]) == 0
    return docs


@pytest.fixture()
def docs(reference, tmp_path) -> Path:
    return Path(shutil.copytree(reference, tmp_path / "docs", symlinks=True))


def test_the_manifest_records_every_generated_file_and_its_digest(docs):
    manifest = json.loads((docs / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["version"] == 2 and set(manifest["generated"]) == {"encoder-decoder", "index.md"}
    generated = {f"encoder-decoder/{rel}": sha for rel, sha in manifest["generated"]["encoder-decoder"].items()}
    generated["index.md"] = manifest["generated"]["index.md"][""]
    assert generated == digests(docs, skip=(".",))


def test_files_the_user_adds_to_a_report_folder_are_kept_and_stale_generated_ones_go(docs):
    report = docs / "encoder-decoder"
    (report / "my-notes.md").write_text("my notes", encoding="utf-8")
    (report / "mine").mkdir()
    (report / "mine" / "sketch.png").write_bytes(b"not a generated figure")
    (report / "figures" / "my-figure.png").write_bytes(b"mine too")
    (report / "my-link").symlink_to("index.md")
    stale = report / "encoder" / "99-old-snapshot.md"  # written by an earlier build that the new one no longer writes
    stale.write_text("stale", encoding="utf-8")
    manifest = json.loads((docs / MANIFEST).read_text(encoding="utf-8"))
    manifest["generated"]["encoder-decoder"]["encoder/99-old-snapshot.md"] = hashlib.sha256(b"stale").hexdigest()
    (docs / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    users = {rel: sha for rel, sha in digests(docs).items() if rel.startswith(("encoder-decoder/my", "encoder-decoder/mine/", "encoder-decoder/figures/my"))}
    assert len(users) == 4

    assert main(["build", "--model", "encoder-decoder", "--src", "a different sentence", "--out", str(docs), "-q"]) == 0

    after = digests(docs)
    assert {rel: after.get(rel) for rel in users} == users
    assert not stale.exists() and os.readlink(report / "my-link") == "index.md"
    assert "a different sentence" in (report / "index.md").read_text(encoding="utf-8")
    recorded = json.loads((docs / MANIFEST).read_text(encoding="utf-8"))["generated"]["encoder-decoder"]
    assert not any(rel.startswith(("my", "mine/", "figures/my")) for rel in recorded)
    assert leftovers(docs) == []


def test_a_hand_edited_generated_file_stops_the_build_before_anything_changes(docs):
    (docs / "encoder-decoder" / "index.md").write_text("my rewrite", encoding="utf-8")
    before = digests(docs)
    result = run_cli("build", "--model", "encoder-decoder", "--src", "a different sentence", "--out", str(docs))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"1 generated file edited by hand since the last build ({docs / 'encoder-decoder' / 'index.md'})" in result.stderr
    assert "move your edits elsewhere, or pass --force to overwrite them" in result.stderr
    assert digests(docs) == before and leftovers(docs) == []


def test_many_hand_edits_are_named_in_one_line_with_a_count(docs):
    pages = sorted((docs / "encoder-decoder" / "encoder").glob("*.md"))[:5]
    for page in pages:
        page.write_text("edited", encoding="utf-8")
    before = digests(docs)
    result = run_cli("build", "--model", "encoder-decoder", "--out", str(docs))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "5 generated files edited by hand" in result.stderr and str(pages[0]) in result.stderr and "and 2 more" in result.stderr
    assert digests(docs) == before


def test_force_overwrites_hand_edits_figures_included(docs, reference):
    (docs / "encoder-decoder" / "index.md").write_text("my rewrite", encoding="utf-8")
    (docs / "encoder-decoder" / "figures" / "tokens.png").write_bytes(b"a figure I drew")  # unchanged inputs: would be reused
    assert "--force" in run_cli("build", "--help").stdout and "edits are lost" in run_cli("build", "--help").stdout
    result = run_cli("build", "--model", "encoder-decoder", "--out", str(docs), "--force", "-q")
    assert result.returncode == 0, result.stderr
    assert digests(docs) == digests(reference)  # same inputs: byte-identical to a clean build


def test_a_user_file_where_the_new_output_writes_is_refused(docs):
    """A file the generator did not write (here: one a newer generator starts writing) is never overwritten."""
    (docs / "encoder-decoder" / "questions.md").write_text("my own questions", encoding="utf-8")
    manifest = json.loads((docs / MANIFEST).read_text(encoding="utf-8"))
    del manifest["generated"]["encoder-decoder"]["questions.md"]
    (docs / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    before = digests(docs)
    result = run_cli("build", "--model", "encoder-decoder", "--out", str(docs))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"{docs / 'encoder-decoder' / 'questions.md'}: yours, but the new output writes the same path; rename it" in result.stderr
    assert digests(docs) == before and leftovers(docs) == []


@pytest.mark.parametrize("old_manifest", [{"generated": ["encoder-decoder", "index.md"]}, ["encoder-decoder", "index.md"]],
                         ids=["version-1", "bare-list"])
def test_a_manifest_of_the_old_format_is_migrated_and_nothing_the_user_could_have_written_is_lost(docs, old_manifest, caplog):
    """Before digests, the manifest only named the report folders: a file in them may be the user's. Files the new
    output does not write are kept where they are; the old versions of those it writes again are kept aside."""
    (docs / MANIFEST).write_text(json.dumps(old_manifest), encoding="utf-8")
    report = docs / "encoder-decoder"
    (report / "my-notes.md").write_text("my notes", encoding="utf-8")
    (report / "mine" / "deeper").mkdir(parents=True)
    (report / "mine" / "deeper" / "sketch.txt").write_text("nested", encoding="utf-8")
    (report / "my-link").symlink_to("index.md")
    (report / "index.md").write_text("an overview I edited by hand", encoding="utf-8")
    users = {rel: sha for rel, sha in digests(docs).items() if rel.startswith(("encoder-decoder/my", "encoder-decoder/mine/"))}
    assert len(users) == 3

    result = run_cli("build", "--model", "encoder-decoder", "--src", "a different sentence", "--out", str(docs))

    assert result.returncode == 0, result.stderr
    after = digests(docs)
    assert {rel: after.get(rel) for rel in users} == users
    assert (docs / ".before-upgrade" / "encoder-decoder" / "index.md").read_text(encoding="utf-8") == "an overview I edited by hand"
    assert "a different sentence" in (report / "index.md").read_text(encoding="utf-8")
    assert "older version" in caplog.text and ".before-upgrade" in caplog.text and "my-notes.md" in caplog.text
    manifest = json.loads((docs / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["version"] == 2 and not any(rel.startswith("my") for rel in manifest["generated"]["encoder-decoder"])
    assert leftovers(docs) == []


def test_empty_folders_the_user_makes_in_a_report_folder_survive_builds(docs):
    for folder in ("drafts", "figures/mine", "mine/a/b"):
        (docs / "encoder-decoder" / folder).mkdir(parents=True)
    for sentence in ("a different sentence", "and another one"):
        assert main(["build", "--model", "encoder-decoder", "--src", sentence, "--out", str(docs), "-q"]) == 0
        assert all((docs / "encoder-decoder" / folder).is_dir() for folder in ("drafts", "figures/mine", "mine/a/b"))


@pytest.mark.parametrize("name", [".staging-x", ".staging-abcd1234", ".trash-x"])
def test_a_staging_or_trash_folder_the_generator_did_not_make_is_neither_used_nor_deleted(docs, name, caplog):
    """A folder named like a build's leftover but not marked as one is the user's: the build neither finishes it
    (blaming the user's file it would overwrite) nor deletes it; its own leftovers it still clears."""
    (docs / "encoder-decoder" / "my-notes.md").write_text("my notes", encoding="utf-8")
    planted = docs / name
    (planted / "encoder-decoder").mkdir(parents=True)
    (planted / "encoder-decoder" / "my-notes.md").write_text("planted", encoding="utf-8")
    (planted / MANIFEST).write_text(json.dumps({"version": 2, "generated": {"encoder-decoder": {}}}), encoding="utf-8")
    before = digests(planted)
    ours = docs / ".trash-left-by-a-killed-build"
    ours.mkdir()
    transformer_trace.docs_folder.staging._mark_ours(ours)

    result = run_cli("build", "--model", "encoder-decoder", "--src", "a different sentence", "--out", str(docs))

    assert result.returncode == 0, result.stderr
    assert (docs / "encoder-decoder" / "my-notes.md").read_text(encoding="utf-8") == "my notes"
    assert digests(planted) == before and not ours.exists()
    assert name in caplog.text and "not made by the generator" in caplog.text


def test_a_symlink_loop_as_out_is_refused_in_one_line(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    result = run_cli("build", "--model", "encoder-decoder", "--out", str(loop))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "leads back to itself" in result.stderr


# --- one build at a time ---------------------------------------------------------------------------------------

def test_a_second_build_is_refused_while_the_first_is_writing(docs):
    holding, release, outcome = threading.Event(), threading.Event(), []

    def first_build() -> None:
        try:
            with staged_output(docs, entries=["encoder-decoder", "index.md"]):
                holding.set()
                release.wait(300)
                raise RuntimeError("the first build fails: nothing of it may show")
        except RuntimeError as exc:
            outcome.append(exc)

    before = digests(docs)
    thread = threading.Thread(target=first_build)
    thread.start()
    try:
        assert holding.wait(60)
        started = json.loads((docs / LOCK).read_text(encoding="utf-8"))
        assert started["pid"] == os.getpid() and started["host"] == socket.gethostname()
        second = subprocess.run(cli("--src", "a different sentence", "--out", str(docs)), capture_output=True, text=True, cwd=ROOT)
    finally:
        release.set()
        thread.join()
    clock = datetime.fromisoformat(started["started"]).strftime("%H:%M:%S")
    assert second.returncode == 2 and second.stderr == (
        f"error: another build (pid {os.getpid()}, started {clock}) is writing {docs}; wait for it to finish\n")
    assert outcome and digests(docs) == before and leftovers(docs) == []


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_lock_left_by_a_dead_build_is_taken_over(docs):
    (docs / LOCK).write_text(json.dumps({"pid": _dead_pid(), "host": socket.gethostname(), "started": "2020-01-01T00:00:00"}))
    result = run_cli("build", "--model", "encoder-decoder", "--src", "a different sentence", "--out", str(docs), "-q")
    assert result.returncode == 0 and result.stderr == ""
    assert "a different sentence" in (docs / "encoder-decoder" / "index.md").read_text(encoding="utf-8")
    assert leftovers(docs) == []


def test_a_lock_held_on_another_machine_is_respected(docs):
    (docs / LOCK).write_text(json.dumps({"pid": 4321, "host": "another-machine", "started": "2020-01-01T12:03:04"}))
    before = digests(docs)
    result = run_cli("build", "--model", "encoder-decoder", "--out", str(docs))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "another build (pid 4321 on another-machine, started 2020-01-01 12:03:04)" in result.stderr
    assert f"delete {docs / LOCK} if that build is gone" in result.stderr
    assert digests(docs) == before


# --- interrupted and killed builds -----------------------------------------------------------------------------

def _start_and_wait_for_staging(docs: Path, *args: str) -> subprocess.Popen:
    """Start a build in its own process group and return once it writes into its staging folder."""
    build = subprocess.Popen(cli("--out", str(docs), *args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    deadline = time.monotonic() + 240
    while not list(docs.glob(".staging-*")):
        assert build.poll() is None, build.communicate()
        assert time.monotonic() < deadline, "the build never started writing"
        time.sleep(0.05)
    return build


def test_a_killed_build_leaves_the_site_and_the_next_build_cleans_up(docs):
    (docs / "encoder-decoder" / "my-notes.md").write_text("my notes", encoding="utf-8")
    before = digests(docs)
    build = _start_and_wait_for_staging(docs, "--src", "a different sentence")
    os.killpg(build.pid, signal.SIGKILL)  # the build and its figure workers: no cleanup runs
    build.communicate()
    assert leftovers(docs) and digests(docs, skip=LEFTOVERS) == before

    assert main(["build", "--model", "encoder-decoder", "--src", "a different sentence", "--out", str(docs), "-q"]) == 0
    assert leftovers(docs) == []
    assert (docs / "encoder-decoder" / "my-notes.md").read_text(encoding="utf-8") == "my notes"
    assert "a different sentence" in (docs / "encoder-decoder" / "index.md").read_text(encoding="utf-8")


def test_ctrl_c_during_a_build_changes_nothing_and_leaves_nothing(docs):
    before = digests(docs)
    build = _start_and_wait_for_staging(docs, "--src", "a different sentence")
    os.kill(build.pid, signal.SIGINT)
    out, err = build.communicate(timeout=300)
    assert build.returncode == 130 and err == "interrupted: nothing was changed, the previous site is as it was\n"
    assert digests(docs) == before and leftovers(docs) == []


def test_ctrl_c_during_the_swap_waits_until_the_new_site_is_live(docs, monkeypatch):
    swap = transformer_trace.docs_folder.staging._swap

    def ctrl_c_then_swap(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # delivered at once to this (main) thread, unless held back
        return swap(*args, **kwargs)

    monkeypatch.setattr(transformer_trace.docs_folder.staging, "_swap", ctrl_c_then_swap)
    result = run_cli("build", "--model", "encoder-decoder", "--src", "a different sentence", "--out", str(docs))
    assert result.returncode == 130
    assert result.stderr == f"interrupted after the new site was written: {docs} holds the new reports\n"
    assert "a different sentence" in (docs / "encoder-decoder" / "index.md").read_text(encoding="utf-8")
    assert leftovers(docs) == []
    monkeypatch.undo()
    assert main(["build", "--model", "encoder-decoder", "--out", str(docs), "-q"]) == 0  # the manifest matches: no "edited"


KILL_DURING_SWAP = """
import os, sys
from pathlib import Path
import transformer_trace.docs_folder.staging
from transformer_trace.cli import main

real_replace = os.replace
def replace(src, dst):
    if Path(src).parent.name.startswith(".staging-") and not Path(src).name.startswith("."):
        os._exit(9)  # the old report is in the trash, the new one not yet in place: as if killed right here
    real_replace(src, dst)
transformer_trace.docs_folder.staging.os.replace = replace
main(["build", "--model", "encoder-decoder", "--src", "a different sentence", "--out", sys.argv[1], "-q"])
"""


def test_a_build_killed_during_its_swap_is_finished_by_the_next(docs):
    (docs / "encoder-decoder" / "my-notes.md").write_text("my notes", encoding="utf-8")
    killed = subprocess.run([sys.executable, "-c", KILL_DURING_SWAP, str(docs)], cwd=ROOT, capture_output=True, text=True)
    assert killed.returncode == 9, killed.stderr
    assert not (docs / "encoder-decoder").exists()  # the half-done state this test is about

    assert main(["build", "--model", "vit", "--vit-size", "tiny", "--out", str(docs), "-q"]) == 0  # not a hand edit
    assert leftovers(docs) == []
    assert (docs / "encoder-decoder" / "my-notes.md").read_text(encoding="utf-8") == "my notes"
    assert "a different sentence" in (docs / "encoder-decoder" / "index.md").read_text(encoding="utf-8")
    assert main(["build", "--model", "encoder-decoder", "--out", str(docs), "-q"]) == 0


def test_files_pdf_export_writes_are_recorded_so_the_next_build_goes_ahead(docs, monkeypatch, tmp_path):
    import transformer_trace.pdf

    def print_reports(site, out_dir, reports):
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "encoder-decoder.pdf").write_bytes(b"%PDF-1.7 stand-in")
        return [out_dir / "encoder-decoder.pdf"]

    monkeypatch.setattr(transformer_trace.pdf, "find_chromium", lambda: "chromium")
    monkeypatch.setattr(transformer_trace.pdf, "site_dir", lambda config, docs: tmp_path / "site")
    monkeypatch.setattr(transformer_trace.pdf, "_mkdocs_build", lambda config: None)
    monkeypatch.setattr(transformer_trace.pdf, "print_reports", print_reports)
    transformer_trace.pdf.export(docs, tmp_path / "mkdocs.yml", REPORTS, quiet=True)  # rewrites docs/index.md to link the PDF
    recorded = json.loads((docs / MANIFEST).read_text(encoding="utf-8"))["generated"]
    assert set(recorded["pdf"]) == {"encoder-decoder.pdf", "index.json"}
    assert "pdf/encoder-decoder.pdf" in (docs / "index.md").read_text(encoding="utf-8")
    result = run_cli("build", "--model", "encoder-decoder", "--out", str(docs), "-q")
    assert result.returncode == 0, result.stderr
