"""The plugin in someone else's MkDocs site (issue 32, point 5): the README's own configuration shows the check icons,
another theme builds with one line saying the pages are made for Material, `use_directory_urls: false` keeps every
explorer's data link, files of the user's (a snapshots.json, a README.md home page, a "GPT" nav section, inline code
with an entity) are theirs, and an `!ENV` option without a value is refused in one line.

One small GPT report is generated once; each site copies it and builds with `generate: false`, so these tests build
sites, not models, except where generating is the point."""

from __future__ import annotations

import posixpath
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.site.site_nav import navigation
from tests.test_plugin import ENV, state

README_CONFIG = """site_name: Mine
theme:
  name: THEME
plugins:
  - search
  - transformer-trace:
      generate: false
      reports:
        gpt: {prompt: "Attention is all you need.", generate: 2}
"""
FISH = 'Inline code: `aria-label="Fish &amp; chips"`.'


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """docs/ holding one generated GPT report (and its manifest), made once."""
    docs = tmp_path_factory.mktemp("report") / "docs"
    assert main(["build", "--model", "gpt", "--out", str(docs), "--generate", "2", "-q"]) == 0
    return docs


def site(tmp_path: Path, report: Path, config: str, pages: dict[str, str] | None = None) -> Path:
    """A project of the user's: mkdocs.yml, their own pages, and a copy of the generated report."""
    docs = tmp_path / "docs"
    shutil.copytree(report / "gpt", docs / "gpt")
    shutil.copy2(report / ".generated.json", docs / ".generated.json")
    for name, text in (pages or {"index.md": f"# Welcome\n\n{FISH}\n"}).items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    return tmp_path


def build(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", *args], cwd=project, capture_output=True, text=True,
                          env=ENV, timeout=300)


def report_pages(project: Path) -> list[Path]:
    return sorted((project / "site" / "gpt").rglob("*.html"))


def warnings(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("WARNING")]


@pytest.mark.parametrize("theme", ["material", "mkdocs", "readthedocs"])
def test_the_readme_configuration_shows_check_icons_under_every_theme_and_other_themes_are_told_once(tmp_path, report,
                                                                                                      theme):
    project = site(tmp_path, report, README_CONFIG.replace("THEME", theme))
    result = build(project)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    pages = report_pages(project)
    assert pages and not [p for p in pages if ":material-" in p.read_text(encoding="utf-8")]
    assert any('class="twemoji tt-ok"' in p.read_text(encoding="utf-8") for p in pages)
    said = [line for line in warnings(result) if "Material theme" in line]
    assert len(said) == (0 if theme == "material" else 1) and len(warnings(result)) == len(said), result.stderr


@pytest.mark.parametrize("reports", ["{}", '{gpt: {prompt: "x"}}'])
def test_the_users_own_pages_are_not_unescaped(tmp_path, report, reports):
    config = ("site_name: Mine\ntheme:\n  name: material\nplugins:\n  - search\n  - transformer-trace:\n"
              f"      generate: false\n      reports: {reports}\n")
    project = site(tmp_path, report, config)
    result = build(project)
    assert result.returncode == 0, result.stderr
    home = (project / "site" / "index.html").read_text(encoding="utf-8")
    assert "Fish &amp;amp; chips" in home and "Fish &amp; chips" not in home


@pytest.mark.parametrize("directory_urls", [True, False])
def test_every_explorer_finds_its_data_with_either_url_style(tmp_path, report, directory_urls):
    config = README_CONFIG.replace("THEME", "material") + f"use_directory_urls: {str(directory_urls).lower()}\n"
    project = site(tmp_path, report, config)
    assert build(project).returncode == 0
    out = project / "site"
    links = 0
    for page in report_pages(project):
        folder = posixpath.dirname(page.relative_to(out).as_posix())  # the page's URL is its file's
        for link in re.findall(r'data-index="([^"]+)"', page.read_text(encoding="utf-8")):
            target = posixpath.normpath(posixpath.join(folder, link))
            assert (out / target).is_file() and target == "gpt/data/index.json", (page, link)
            links += 1
    assert links > 10


def test_snapshots_json_files_of_the_users_are_not_taken_for_reports(tmp_path, report):
    pages = {"index.md": "# Welcome\n", "notes/index.md": "# Notes\n", "other/index.md": "# Other\n",
             "x/index.md": "# X\n", "notes/snapshots.json": "[1, 2]", "other/snapshots.json": '{"a": 1}',
             "x/snapshots.json": '{"model": "x", "title": "X", "stages": [1], "snapshots": []}'}
    project = site(tmp_path, report, README_CONFIG.replace("THEME", "material"), pages)
    result = build(project)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert (project / "site" / "notes" / "index.html").is_file() and (project / "site" / "gpt" / "index.html").is_file()


def test_a_readme_home_page_stays_the_home_page_when_a_report_is_generated(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "README.md").write_text("# My README home\n", encoding="utf-8")
    assert main(["build", "--model", "gpt", "--out", str(docs), "--generate", "2", "-q"]) == 0
    assert not (docs / "index.md").exists()
    (tmp_path / "mkdocs.yml").write_text(README_CONFIG.replace("THEME", "material"), encoding="utf-8")
    result = build(tmp_path)
    assert result.returncode == 0 and not warnings(result), result.stderr
    assert "My README home" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_an_env_option_without_a_value_is_refused_in_one_line(tmp_path, report, monkeypatch):
    monkeypatch.delenv("TT_TEST_UNSET_PROMPT", raising=False)
    config = README_CONFIG.replace("THEME", "material").replace("generate: false", "generate: true").replace(
        '"Attention is all you need."', "!ENV TT_TEST_UNSET_PROMPT")
    project = site(tmp_path, report, config)
    before = state(project / "docs")
    result = build(project)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if "reports.gpt.prompt: has no value" in line]
    assert len(lines) == 1 and "!ENV" in lines[0], result.stderr
    assert state(project / "docs") == before


def _titles(nav: list) -> list[str]:
    return [next(iter(entry)) for entry in nav if isinstance(entry, dict)]


def test_a_nav_with_a_section_of_the_reports_title_gets_no_second_one(report):
    nav = navigation(report, [{"Home": "index.md"}, {"GPT": ["gpt-notes.md"]}])
    assert _titles(nav) == ["Home", "GPT report", "GPT"]


def test_a_nav_that_places_the_reports_pages_itself_keeps_them_where_it_put_them(report):
    user = [{"Home": "index.md"}, {"Models": [{"My GPT": "gpt/index.md"}]}]
    assert navigation(report, user) == user


def test_without_a_nav_a_readme_is_the_home_page_before_the_reports(report):
    nav = navigation(report, None, ["README.md", "guide.md", "gpt/index.md"])
    assert nav[0] == {"Home": "README.md"} and _titles(nav)[1] == "GPT" and nav[-1] == "guide.md"


@pytest.mark.parametrize("own_math", [True, False])
def test_the_plugins_math_reaches_the_sites_pages_only_where_the_site_has_no_math_of_its_own(tmp_path, report,
                                                                                             own_math):
    extension = "markdown_extensions:\n  - pymdownx.arithmatex:\n      generic: true\n" if own_math else ""
    project = site(tmp_path, report, README_CONFIG.replace("THEME", "material") + extension,
                   {"index.md": "# Welcome\n\nMine: \\(a^2\\).\n"})
    assert build(project).returncode == 0
    home = (project / "site" / "index.html").read_text(encoding="utf-8")
    assert ("<math" in home) is not own_math and '<span class="arithmatex">' in home



@pytest.mark.parametrize("directory_urls", [True, False])
def test_a_page_of_the_users_at_the_address_of_a_report_page_stops_the_build_in_one_line(tmp_path, report,
                                                                                         directory_urls):
    config = README_CONFIG.replace("THEME", "material") + f"use_directory_urls: {str(directory_urls).lower()}\n"
    project = site(tmp_path, report, config, {"index.md": "# Welcome\n", "gpt.md": "# Mine\n"})
    result = build(project)
    assert "Traceback" not in result.stderr, result.stderr
    if not directory_urls:  # gpt.html and gpt/index.html: both pages are in the site
        assert result.returncode == 0 and "Mine" in (project / "site" / "gpt.html").read_text(encoding="utf-8")
        return
    said = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert result.returncode == 1 and said == ["ERROR   -  transformer-trace: your gpt.md would be written to "
                                               "gpt/index.html, where the gpt report's page goes; rename it"], said
