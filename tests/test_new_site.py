"""`transformer-trace new DIR`: plain files a MkDocs user would write — the folder's name as Markdown text, an offline
theme, one navigation entry per page — and a name no site could carry refused in one line with nothing left behind."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import markdown
import pytest
import yaml

from transformer_trace.cli import main
from transformer_trace.new_command import markdown_text
from transformer_trace.text import clean_text

NAMES = ["my-site", "my_site", "ML notes (2026)", "a*b*c", "_init_", "R&D", "&amp; &#60;", "<img src=x onerror=y>",
         "a < b > c", "[link](javascript:x)", "`code`", "back\\slash", "C# ##", "x {: .big}", "chloé 模型", "!#+-.|~^="]


@pytest.mark.parametrize("name", NAMES)
def test_the_title_is_the_folders_name_as_markdown_text(name):
    rendered = markdown.markdown("# " + markdown_text(name), extensions=["toc", "tables", "fenced_code", "attr_list"])
    heading = re.fullmatch(r"<h1[^>]*>(.*)</h1>", rendered, re.S)
    assert heading and "<" not in heading.group(1), rendered  # text only: no tag, no link, no emphasis
    assert html.unescape(heading.group(1)) == clean_text(name)


@pytest.mark.parametrize("name, written", [("my-site", "my-site"), ("my_site", "my_site"), ("R&D 2", "R&D 2"),
                                           ("a*b", "a\\*b"), ("<b>", "&lt;b>")])
def test_only_what_markdown_or_html_would_read_is_escaped(name, written):
    assert markdown_text(name) == written


def test_new_writes_an_offline_theme_whose_sections_are_their_overviews(tmp_path):
    assert main(["new", str(tmp_path / "my-site"), "-q"]) == 0
    assert (tmp_path / "my-site" / "docs" / "index.md").read_text(encoding="utf-8").startswith("# my-site\n")
    theme = yaml.safe_load((tmp_path / "my-site" / "mkdocs.yml").read_text(encoding="utf-8"))["theme"]
    assert theme["font"] is False and "navigation.indexes" in theme["features"]


@pytest.mark.parametrize("name, said", [
    ("", "not an empty one"),
    (os.fsdecode(b"caf\xe9"), "not valid UTF-8"),
    ("a\ufffeb", "U+FFFE"),
    ("a\ufdd0b", "U+FDD0"),
    ("two\nlines", "control character (U+000A"),
    ("bell\x07", "control character (U+0007"),
], ids=["empty", "latin-1 bytes", "U+FFFE", "U+FDD0", "newline", "bell"])
def test_a_name_no_site_could_carry_is_refused_in_one_line_and_nothing_is_written(tmp_path, monkeypatch, capsys,
                                                                                  name, said):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as refused:
        main(["new", name])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and err.count("\n") == 1 and said in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def _primary_navigation(page: str) -> list[str]:
    """The entries of Material's site navigation on a page (not its table of contents): their texts."""
    nav = page[page.index("md-nav--primary"):page.index("md-nav--secondary")]
    found = []
    for match in re.finditer(r'<(a|label)\b([^>]*)class="md-nav__link[^"]*"([^>]*)>(.*?)</\1>', nav, re.S):
        href = re.search(r'href="([^"]*)"', match.group(2) + match.group(3))
        text = re.sub(r"<[^>]+>", "", match.group(4)).strip()
        if text and not (href and href.group(1).startswith("#")):
            found.append(text)
    return found


@pytest.mark.slow
def test_mkdocs_build_strict_builds_the_new_site_offline_with_each_page_once_in_the_navigation(tmp_path):
    assert main(["new", str(tmp_path / "my-site"), "-q"]) == 0
    site = tmp_path / "my-site"
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=site, capture_output=True,
                           text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stderr[-3000:]
    pages = list((site / "site").rglob("*.html"))
    assert pages and not [p for p in pages if "fonts.googleapis" in p.read_text(encoding="utf-8")]
    overview = (site / "site" / "toy-vit" / "index.html").read_text(encoding="utf-8")
    entries = _primary_navigation(overview)
    assert len(entries) > 20 and [t for t, n in Counter(entries).items() if n > 1] == []
    home = (site / "site" / "index.html").read_text(encoding="utf-8")
    assert re.search(r"<h1[^>]*>my-site", home)
