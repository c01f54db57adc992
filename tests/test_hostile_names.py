"""User text is data (issue 32, point 1): a traced script's file name, its arguments, marker titles, a dict's keys,
its exception message and what it prints are shown as text on every page, never read as Markdown or HTML, with
control and direction characters removed. A corpus of hostile names is traced, the site built, and its pages read as
Markdown, as HTML and (where chromium is installed) in a real browser, which must run none of the injected script."""

from __future__ import annotations

import contextlib
import html
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.text import fence_title, page_text
from tests.test_plugin import ENV

# Each file name breaks something when written raw: a fence and a tag, a table cell, a heading, a link, the page's
# direction, Jinja, math.
HOSTILE_NAMES = [
    "ev\u202eil\n```\n<img src=x onerror=alert(1)>.py",
    "pipe | cell\n| new row.py",
    "# heading [link](javascript:alert(2)).py",
    "{{ jinja }} $$x$$ \u2066<script>alert(3)<\\script>.py",
]
SCRIPT = """import sys, torch
print("<script>alert('printed')</script>", sys.argv[1:])
x = torch.ones(2, 3)  # trace: x
d = {"<img src=y onerror=alert(4)>": torch.ones(2)}  # trace: dict
raise ValueError("<img src=z onerror=alert(5)> | boom\\n| col")
"""
# A marker's title is the user's text too (a custom point's marker has none: "# trace: name [what to read]").
TITLED = """import torch
x = torch.ones(1, 3, 8)  # Snapshot #1 - <b>bold</b> <img src=q onerror=alert(9)> | `tick` [l](javascript:alert(10))
"""
ARGUMENTS = ["a\nb", "c | d", "<img src=w onerror=alert(6)>"]
INJECTED = re.compile(r"<img src=[xyzwq]|<script>alert|<b>bold|\u202e|\u2066|href=\"javascript:")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """Every hostile name traced into one docs/, and the site built from it."""
    work = tmp_path_factory.mktemp("hostile")
    for i, name in enumerate(HOSTILE_NAMES):
        script = work / "scripts" / str(i) / name
        script.parent.mkdir(parents=True)
        script.write_text(SCRIPT, encoding="utf-8")
        assert main(["trace", str(script), "--out", str(work / "docs"), "--name", f"t{i}", "-q", "--", *ARGUMENTS]) == 2
    (work / "scripts" / "titled.py").write_text(TITLED, encoding="utf-8")
    assert main(["trace", str(work / "scripts" / "titled.py"), "--out", str(work / "docs"), "--name", "titled",
                 "-q"]) in (0, 1)
    (work / "mkdocs.yml").write_text("site_name: Hostile\ntheme:\n  name: material\nplugins:\n  - search\n"
                                     "  - transformer-trace:\n      generate: false\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build"], cwd=work, capture_output=True, text=True,
                            env=ENV, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return work


def test_page_text_and_fence_titles_are_one_line_of_literal_text():
    for name in HOSTILE_NAMES:
        for shown in (page_text(name), fence_title(name)):
            assert "\n" not in shown and "\u202e" not in shown and "\u2066" not in shown
        assert not re.search(r"[<>`|\[\]{}$]", re.sub(r"&#\d+;", "", page_text(name)))
        assert not re.search(r'["`\\]', fence_title(name))


def test_no_page_holds_a_hostile_name_as_markdown(site):
    for page in (site / "docs").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        assert "\u202e" not in text and "\u2066" not in text, page
        for line in text.splitlines():
            if line.startswith("```") and "title=" in line:  # a code block's title: one line, closed
                assert re.fullmatch(r'`{3,}python linenums="\d+" hl_lines="[\d-]+" title="[^"`\\]*"', line), line
        tables = [line for line in text.splitlines() if line.startswith("| ")]
        assert all(line.rstrip().endswith("|") for line in tables), page  # no cell broken across lines


def test_no_built_page_holds_an_injected_element(site):
    pages = sorted((site / "site").glob("t*/**/*.html"))
    assert len(pages) > 4
    for page in pages:
        found = INJECTED.search(page.read_text(encoding="utf-8"))
        assert found is None, (page, found and found.group())
    index = (site / "site" / "t0" / "index.html").read_text(encoding="utf-8")
    assert "evil ``` <img src=x onerror=alert(1)>.py" in html.unescape(re.sub(r"<[^>]+>", "", index))  # as text


@pytest.mark.browser
def test_a_browser_runs_none_of_the_injected_script_and_shows_the_names(site, browser):
    from transformer_trace.pdf import serve

    dialogs: list[str] = []
    with serve(site / "site") as url:
        page = browser.new_page()
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        for folder in [f"t{i}" for i in range(len(HOSTILE_NAMES))] + ["titled"]:
            for path in (f"{folder}/", f"{folder}/print/"):
                page.goto(f"{url.rstrip('/')}/{path}")
                assert page.locator("img[src='x'], img[src='y'], img[src='z'], img[src='w'], img[src='q']").count() == 0
                assert page.locator("article script").count() == 0
        page.goto(f"{url.rstrip('/')}/t0/")
        assert "<img src=x onerror=alert(1)>" in page.locator("article").inner_text()
        page.goto(f"{url.rstrip('/')}/titled/input/01-raw-input-tokens-ids/")
        assert "# Snapshot #1 - <b>bold</b> <img src=q onerror=alert(9)>" in page.locator("article").inner_text()
        page.close()
    assert dialogs == []


def test_the_terminal_gets_one_line_per_message_with_no_escape_sequence_or_direction_override(tmp_path, capfd):
    script = tmp_path / "scripts" / "e\x1b[2J\x1b]0;title\x07\u202egnp\nx.py"
    script.parent.mkdir(parents=True)
    script.write_text("import torch\nx = torch.ones(2)  # trace: x\nraise ValueError('one\\n\\x1b[31mtwo\\u202e')\n",
                      encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "docs"), "--name", "t"]) == 2
    out, err = capfd.readouterr()
    ours = [line for line in (out + err).splitlines() if line.startswith(("traced ", "error: "))]
    assert len(ours) == 2 and ours[1].startswith("error: the script failed: ValueError: one"), out + err
    assert not any(re.search("[\x1b\x07\u202e]", line) for line in ours), ours
    script.rename(script.with_name("\x1b[2J.py"))
    assert main(["trace", str(script), "--out", str(tmp_path / "docs"), "--name", "t"]) == 2
    assert "\x1b" not in capfd.readouterr().err


NEW_SITE_NAME = 'x" onmouseover="alert(7) <img src=v onerror=alert(8)> \u202eb'  # a newline is refused (test_new_site)


@pytest.mark.browser
def test_a_site_started_in_a_hostile_folder_name_shows_it_as_text_in_the_browser(tmp_path, capfd, browser):
    from transformer_trace.pdf import serve

    assert main(["new", str(tmp_path / NEW_SITE_NAME)]) == 0
    said = capfd.readouterr().out
    assert said.count("\n") == 1 and "\u202e" not in said, said
    folder = tmp_path / NEW_SITE_NAME
    config = (folder / "mkdocs.yml").read_text(encoding="utf-8")
    (folder / "mkdocs.yml").write_text(config.replace("toy-vit: {}", "{}"), encoding="utf-8")  # no model to run
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build"], cwd=folder, capture_output=True, text=True,
                            env=ENV, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    dialogs: list[str] = []
    with serve(folder / "site") as url:
        page = browser.new_page()
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(url)
        assert page.locator("img[src='v'], [onmouseover]").count() == 0
        page.locator("[aria-label]").first.hover()
        assert "<img src=v onerror=alert(8)>" in page.locator("article h1").inner_text()
        assert "<img src=v onerror=alert(8)>" in page.title()
        page.close()
    assert dialogs == []


STUDENT = "<img src=x onerror=window.__pwned='folder'>"  # a student's folder, titled by the site's navigation


JUPYTER = ("  - mkdocs-jupyter:\n      execute: false\n      include: ['notebooks/*.ipynb']\n      ignore: ['*.md', "
           "'*.py']\n      include_requirejs: false\n      ignore_h1_titles: false\n")


@pytest.fixture(scope="module")
def class_site(tmp_path_factory) -> Path:
    """A class site as a teacher builds it: a student's notebook with active outputs and HTML in its markdown, traced
    into a hostile folder name, its class page, and MkDocs with mkdocs-jupyter configured as the project's mkdocs.yml
    configures it and no nav of its own (the plugin titles the folders); beside it (``plain``), the same docs built
    without the plugin, as the README says to: with a nav that leaves the students' folders out."""
    import json

    from tests.test_published_notebook import ACTIVE_OUTPUTS, HOSTILE_MARKDOWN

    work = tmp_path_factory.mktemp("class")
    notebook = work / "nb.ipynb"
    outputs = [{"output_type": "display_data", "data": {kind: value}, "metadata": {}}
               for kind, value in ACTIVE_OUTPUTS.items()]
    notebook.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# </title><img src=x onerror=window.__pwned='title'>"},
        {"cell_type": "markdown", "metadata": {}, "source": HOSTILE_MARKDOWN},
        {"cell_type": "code", "metadata": {"tags": ["<img src=x onerror=window.__pwned='tag'>"]},
         "execution_count": 1, "outputs": outputs, "source":
            "import torch\nscores = torch.randn(1, 2, 5, 5)\nprobs = scores.softmax(dim=-1)  # BREAKPOINT S13"}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    docs = work / "docs"
    (docs / "students").mkdir(parents=True)
    assert main(["trace", str(notebook), "--out", str(docs / "students" / STUDENT), "--name", "report", "-q"]) == 0
    warned = io.StringIO()
    with contextlib.redirect_stderr(warned):
        assert main(["class", str(docs / "class"), str(docs / "students" / STUDENT), "-q"]) == 0
    assert warned.getvalue().startswith("warning: 1 student folder name(s) hold HTML's characters") and \
        warned.getvalue().count("\n") == 1
    (docs / "index.md").write_text("# Home\n", encoding="utf-8")
    theme = "site_name: Class\ntheme:\n  name: material\n  features: [navigation.sections, navigation.path]\n"
    extensions = "markdown_extensions: [md_in_html, tables, attr_list]\n"
    (work / "mkdocs.yml").write_text(f"{theme}plugins:\n  - search\n  - transformer-trace:\n      generate: false\n"
                                     f"{JUPYTER}{extensions}", encoding="utf-8")
    (work / "plain.yml").write_text(f"{theme}site_dir: plain\nnav:\n  - Home: index.md\n  - Class: class/index.md\n"
                                    f"plugins:\n  - search\n{JUPYTER}{extensions}", encoding="utf-8")
    for config in ("mkdocs.yml", "plain.yml"):
        result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-f", config], cwd=work,
                                capture_output=True, text=True, env=ENV, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
    return work / "site"


@pytest.mark.browser
def test_a_students_notebook_and_folder_name_run_no_script_in_the_browser_and_show_as_text(class_site, browser):
    from urllib.parse import quote

    from transformer_trace.pdf import serve

    dialogs: list[str] = []
    report = f"students/{quote(STUDENT)}/report/"
    with serve(class_site) as url:
        page = browser.new_page()
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        for path in ("", "class/", report, f"{report}notebooks/nb/"):
            page.goto(f"{url.rstrip('/')}/{path}")
            page.wait_for_load_state("load")
            assert page.evaluate("window.__pwned") is None, path
            assert page.locator("img[src='x'], script:text('__pwned'), [onerror]").count() == 0, path
            assert "<img src=x onerror=window.  pwned='folder'>" in page.locator("nav.md-nav--primary").first.text_content(), path
        article = page.locator("article").inner_text()  # the notebook's page: its outputs and markdown as text
        assert "<script>window.__pwned='html'</script>" in article and "window.__pwned='js'" in article
        assert "<svg xmlns=" in article and "<script>window.__pwned='md'</script>" in article
        assert "</title><img src=x onerror=window.__pwned='title'>" in article and page.title().startswith("Your notebook")
        page.close()
    assert dialogs == []


@pytest.mark.browser
def test_built_without_the_plugin_with_the_nav_the_readme_asks_for_no_page_runs_a_students_script(class_site, browser):
    """MkDocs' own navigation prints folder names as HTML (class warns of it); with a nav leaving the students'
    folders out, no page of theirs, notebook and class page included, runs their script."""
    from urllib.parse import quote

    from transformer_trace.pdf import serve

    dialogs: list[str] = []
    plain = class_site.parent / "plain"
    pages = sorted(quote(str(p.parent.relative_to(plain))) + "/" for p in plain.rglob("index.html")
                   if "assets" not in p.parts)
    assert len(pages) > 30 and f"students/{quote(STUDENT)}/report/notebooks/nb/" in pages
    with serve(plain) as url:
        page = browser.new_page()
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        for path in pages:  # every page: the home page, the class page, the student's report and notebook
            assert page.goto(f"{url.rstrip('/')}/{path.removeprefix('./')}").ok, path
            page.wait_for_load_state("load")
            assert page.evaluate("window.__pwned") is None, path
            assert page.locator("img[src='x'], script:text('__pwned'), [onerror]").count() == 0, path
            if path.endswith("notebooks/nb/"):  # its outputs and markdown as text
                assert "<script>window.__pwned='html'</script>" in page.locator("article").inner_text()
        page.close()
    assert dialogs == []
