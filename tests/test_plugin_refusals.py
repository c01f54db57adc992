"""The MkDocs plugin's refusals during `mkdocs build`: an input found bad only while a report is generated names the
mkdocs.yml key of that report's options, in one line, and the docs and site folders stay as they were."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.test_plugin import PLUGIN_KEY, mkdocs, state

CONFIG = """site_name: A tutorial
plugins:
  - transformer-trace:
      reports:
REPORTS
"""


def project(folder: Path, reports: str) -> Path:
    """A small MkDocs project with its own home page, a site built before, and the plugin declaring ``reports``."""
    (folder / "docs").mkdir()
    (folder / "docs" / "index.md").write_text("# Welcome\n", encoding="utf-8")
    (folder / "site").mkdir()
    (folder / "site" / "index.html").write_text("<p>the site built before</p>\n", encoding="utf-8")
    (folder / "mkdocs.yml").write_text(CONFIG.replace("REPORTS", reports), encoding="utf-8")
    return folder


def refused(work: Path) -> str:
    """The one line a failed `mkdocs build` in ``work`` reports; the docs and site folders are unchanged."""
    before_docs, before_site = state(work / "docs"), state(work / "site")
    result = mkdocs(work, "build")
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, result.stderr
    assert state(work / "docs") == before_docs and state(work / "site") == before_site
    return errors[0]


@pytest.mark.parametrize("reports, key, message", [
    ('        gpt: {prompt: "Hi", generate: 2, weights: weights.pt}', "gpt",
     "weights.pt is not a PyTorch state dict torch.load can read"),
    ("        vit: {image: photo.jpg, vit_size: tiny}", "vit", "photo.jpg is not a JPEG, PNG, WebP, GIF or BMP image"),
    # the GPT's forward pass runs (its input is good) before the ViT's image is found bad: the ViT is named
    ('        gpt: {prompt: "Hi", generate: 2}\n        vit: {image: photo.jpg, vit_size: tiny}', "vit",
     "photo.jpg is not a JPEG, PNG, WebP, GIF or BMP image"),
], ids=["gpt-weights-file", "vit-image-file", "vit-image-after-a-good-gpt"])
def test_an_input_found_bad_while_generating_names_the_reports_mkdocs_yml_key(tmp_path, reports, key, message):
    work = project(tmp_path, reports)
    (work / "weights.pt").write_bytes(b"not a state dict\n")
    (work / "photo.jpg").write_bytes(b"not an image\n")
    line = refused(work)
    assert f"mkdocs.yml: {PLUGIN_KEY}.{key}: " in line and message in line, line


def test_a_refusal_no_reports_input_caused_names_the_reports_being_generated(tmp_path):
    from transformer_trace.errors import UserError
    from transformer_trace.site.plugin import _naming_its_report

    config = str(tmp_path / "mkdocs.yml")
    assert _naming_its_report(UserError("docs is a file"), ["gpt", "vit"], config) == (
        f"mkdocs.yml: {PLUGIN_KEY} (generating gpt, vit): docs is a file")
    assert _naming_its_report(UserError("docs is a file"), ["gpt"], config) == f"mkdocs.yml: {PLUGIN_KEY} (generating gpt): docs is a file"
    bad_input = UserError("photo.jpg is not an image")
    bad_input.report = "vit"
    assert _naming_its_report(bad_input, ["gpt", "vit"], config) == f"mkdocs.yml: {PLUGIN_KEY}.vit: photo.jpg is not an image"
    named = UserError(f"mkdocs.yml: {PLUGIN_KEY}.gpt.generate: '0' is not a positive whole number")
    assert _naming_its_report(named, ["gpt", "vit"], config) == str(named)  # named once, not twice


# ----------------------------------------------------------------------------- links to outside the project


def _link_docs_out(work: Path, outside: Path) -> None:
    (outside / "index.md").write_text("# Somewhere else\n", encoding="utf-8")
    shutil.rmtree(work / "docs")
    (work / "docs").symlink_to(outside, target_is_directory=True)


def _link_report_out(work: Path, outside: Path) -> None:
    (outside / "mine.md").write_text("# Not the project's\n", encoding="utf-8")
    (work / "docs" / "gpt").symlink_to(outside, target_is_directory=True)


@pytest.mark.parametrize("link, name", [(_link_docs_out, "docs"), (_link_report_out, "docs/gpt")], ids=["docs", "report-folder"])
def test_mkdocs_build_writes_nothing_through_a_link_to_outside_the_project(tmp_path, link, name):
    work, outside = tmp_path / "project", tmp_path / "elsewhere"
    outside.mkdir()
    project(work.mkdir() or work, '        gpt: {prompt: "Hi", generate: 2}')
    link(work, outside)
    before = state(outside)
    line = refused(work)
    assert f"mkdocs.yml: {PLUGIN_KEY} (generating gpt): {work / name}: a symbolic link to a place outside the project" in line, line
    assert state(outside) == before and sorted(p.name for p in outside.iterdir()) == sorted(before)


def test_a_docs_folder_linked_inside_the_project_is_generated_into(tmp_path):
    work = project(tmp_path, '        gpt: {prompt: "Hi", generate: 2}')
    (work / "docs").rename(work / "content")
    (work / "docs").symlink_to(work / "content", target_is_directory=True)
    result = mkdocs(work, "build")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (work / "content" / "gpt" / "snapshots.json").is_file() and (work / "site" / "gpt" / "index.html").is_file()
