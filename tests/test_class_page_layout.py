"""The class page as a teacher reads it: it fits a phone (390 px) and a laptop (1,280 px) window with no sideways
scroll of the page (a wide table scrolls in its own box), names break only after their separators, the steps nobody
marked are folded away, and the students' table comes as a CSV beside it. A student's traced report in the same site
breaks the names in its tables (the overview's, the stage tables, a snapshot page's first table) the same way.

The students' reports here are written directly (a trace's snapshots.json as the class page reads it): the page's
layout does not depend on what the traces computed, and twelve real traces would take minutes.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_trace.cli import main

ROOT = Path(__file__).resolve().parent.parent

LABELS = [f"S{n:02d}" for n in range(1, 27)]
MARKED = LABELS[7:16]  # the block's steps: the nine every student of this assignment marks
NAMES = ["alice_nguyen-tran.the.third", "bob", "=HYPERLINK(\"x\")", "chloé_de_la_fontaine_de_saint_exupéry", "dan",
         "eve.o'brien", *(f"student_{i:02d}_of_section_b" for i in range(6))]


def student_report(folder: Path, failed: str | None) -> None:
    """A trace's report as the class page reads it: S08-S16 captured, ``failed`` failing, the rest not captured."""
    snapshots = []
    for label in LABELS:
        captured = label in MARKED
        snapshots.append({"label": label, "title": f"Step {label}", "stage": "block", "page": f"block/{label}.md",
                          "captured": captured,
                          "source": {"path": "model.py", "line": 40 + int(label[1:]),
                                     "marker_line": 41 + int(label[1:])} if captured else None,
                          "check": {"name": "equals Q·Kᵀ / √hs", "passed": label != failed, "detail": "off",
                                    **({"evidence": {"kind": "bug form", "name": "1/√d missing",
                                                     "message": "your scores equal Q·Kᵀ without the 1/√8 scaling"}}
                                       if label == failed else {})}
                          if captured else None})
    data = {"model": "report", "title": "Trace", "traced": True, "catalogue": "vit", "snapshots": snapshots,
            "outcome": {"first_failure": f"{failed} Step {failed}" if failed else None}}
    (folder / "block").mkdir(parents=True)
    (folder / "snapshots.json").write_text(json.dumps(data), encoding="utf-8")
    (folder / "index.md").write_text("# Report\n", encoding="utf-8")
    for label in LABELS:
        (folder / "block" / f"{label}.md").write_text(f"# {label}\n", encoding="utf-8")


@pytest.fixture(scope="module")
def class_docs(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("site") / "docs"
    for i, name in enumerate(NAMES):
        student_report(docs / "students" / name / "report", failed=MARKED[i % 3 + 3] if i % 2 else None)
    (docs / "index.md").write_text("# Course\n", encoding="utf-8")
    assert main(["class", str(docs / "class"), *(str(docs / "students" / n) for n in NAMES), "-q"]) == 0
    return docs


def test_the_steps_nobody_marked_are_folded_away_and_left_out_of_the_heat_map(class_docs):
    page = (class_docs / "class" / "index.md").read_text(encoding="utf-8")
    folded = page[page.index("<details"):page.index("</details>")]
    assert "17 steps no student marked" in folded and all(f"S{n:02d} " in folded for n in (1, 7, 17, 26))
    heat = page[page.index('class="class-table class-heat"'):]
    assert [label for label in LABELS if f">{label}</th>" in heat] == MARKED


def test_names_may_break_only_after_their_separators(class_docs):
    page = (class_docs / "class" / "index.md").read_text(encoding="utf-8")
    assert "alice_<wbr>nguyen-<wbr>tran.<wbr>the.<wbr>third" in page
    assert "overflow-wrap: normal; word-break: normal" in page


@pytest.mark.parametrize(("name", "shown"), [
    ("scores_pre_mask", "scores&#95;<wbr>pre&#95;<wbr>mask"),
    ("my_vit.py:22", "my&#95;<wbr>vit&#46;<wbr>py&#58;<wbr>22"),
    ("<b>x_y</b>", "&#60;b&#62;x&#95;<wbr>y&#60;/<wbr>b&#62;"),
])
def test_a_reports_table_shows_a_students_name_escaped_and_breakable_only_after_its_separators(name, shown):
    from transformer_trace.text import name_code

    assert name_code(name) == f'<code class="tt-name">{shown}</code>'
    css = (ROOT / "generator" / "assets" / "tt-report.css").read_text(encoding="utf-8")
    assert ".md-typeset code.tt-name { word-break: normal; overflow-wrap: normal;" in css


def test_the_common_failures_lead_with_what_is_wrong_not_the_checks_claim(class_docs):
    page = (class_docs / "class" / "index.md").read_text(encoding="utf-8")
    failures = page[page.index("## Failures most students hit"):page.index("## Students")]
    assert "<thead><tr><th>What is wrong</th><th>Snapshot</th>" in failures
    rows = [row for row in failures.splitlines() if row.startswith("<tr><td>")]
    assert len(rows) == 3  # S11, S12 and S13 failed, each by one bug form
    assert all(row.startswith("<tr><td><strong>1/√d missing</strong> (failed: equals Q·Kᵀ / √hs)</td>") for row in rows)
    data = json.loads((class_docs / "class" / "class.json").read_text(encoding="utf-8"))
    assert {g["what is wrong"] for g in data["failures"]} == {"1/√d missing"}


def test_the_class_csv_holds_every_students_row_and_verdicts_as_text(class_docs):
    rows = list(csv.reader(io.StringIO((class_docs / "class" / "class.csv").read_text(encoding="utf-8"))))
    header, body = rows[0], rows[1:]
    assert header[:3] == ["student", "catalogue", "status"] and header[-26:] == LABELS
    assert sorted(row[0] for row in body) == sorted("'" + n if n.startswith("=") else n for n in NAMES)
    bob = next(row for row in body if row[0] == "bob")
    assert bob[2] == "failed" and bob[header.index("S12")] == "failed" and bob[header.index("S01")] == "not captured"
    assert "[class.csv](class.csv)" in (class_docs / "class" / "index.md").read_text(encoding="utf-8")


def test_each_students_first_failure_says_where_it_was_marked_as_the_terminal_does(class_docs):
    page = (class_docs / "class" / "index.md").read_text(encoding="utf-8")
    students = page[page.index("## Students"):page.index("## Snapshots")]
    bob = next(row for row in students.splitlines() if ">bob</a>" in row)
    # S12's marker is on line 53 (its statement on 52): the line the terminal's "marked at" and the JUnit file give
    assert "your scores equal Q·Kᵀ without the 1/√8 scaling (equals Q·Kᵀ / √hs) — marked at model.py:53</td>" in bob
    data = json.loads((class_docs / "class" / "class.json").read_text(encoding="utf-8"))
    assert next(s for s in data["students"] if s["name"] == "bob")["first_failure"]["where"] == "model.py:53"
    rows = list(csv.reader(io.StringIO((class_docs / "class" / "class.csv").read_text(encoding="utf-8"))))
    assert next(row for row in rows if row[0] == "bob")[rows[0].index("marked at")] == "model.py:53"


def test_students_with_one_bug_form_are_one_group_though_each_claim_speaks_their_own_names(tmp_path):
    docs = tmp_path / "docs"
    for name, variable in (("ann", "attn_ctx"), ("ben", "context")):
        folder = docs / "students" / name / "report"
        student_report(folder, failed="S12")
        data = json.loads((folder / "snapshots.json").read_text(encoding="utf-8"))
        failed = next(s for s in data["snapshots"] if s["label"] == "S12")
        failed["check"]["name"] = f"equals Q·Kᵀ / √hs from {variable} (S11)"  # as in_users_terms says it
        (folder / "snapshots.json").write_text(json.dumps(data), encoding="utf-8")
    assert main(["class", str(docs / "class"), str(docs / "students" / "ann"), str(docs / "students" / "ben"),
                 "-q"]) == 0
    groups = json.loads((docs / "class" / "class.json").read_text(encoding="utf-8"))["failures"]
    assert [(g["what is wrong"], g["students"], g["message"]) for g in groups] == [("1/√d missing", ["ann", "ben"], "")]
    page = (docs / "class" / "index.md").read_text(encoding="utf-8")
    assert "<tr><td><strong>1/√d missing</strong></td><td>S12 Step S12</td>" in page


# The README's example with a planted bug: the encoder's scores without their 1/√d scaling.
SCALED = "q_heads @ k_heads.transpose(-2, -1) / math.sqrt(d_head)  # Snapshot #10"
FAILING_PAGE = "encoder/10-attention-scores-before-softmax"


@pytest.fixture(scope="module")
def traced_docs(class_docs) -> Path:
    """A student's real trace beside the class page: the README's example (scores_pre_mask_m, attn_weights_c, ...)
    with the scaling left out of #10."""
    source = (ROOT / "examples" / "encoder_decoder_trace.py").read_text(encoding="utf-8")
    assert SCALED in source
    script = class_docs.parent / "encoder_decoder_trace.py"
    script.write_text(source.replace(SCALED, SCALED.replace(" / math.sqrt(d_head)", "")), encoding="utf-8")
    traced = subprocess.run([sys.executable, "-m", "transformer_trace", "trace", str(script), "--out",
                             str(class_docs), "--name", "trace", "-q"], cwd=class_docs.parent, text=True,
                            capture_output=True, timeout=300)
    assert traced.returncode == 1, traced.stderr[-3000:]  # a check failed, with evidence
    return class_docs


def test_a_failing_page_leads_with_what_is_wrong_then_where(traced_docs):
    page = (traced_docs / "trace" / f"{FAILING_PAGE}.md").read_text(encoding="utf-8")
    rows = page[page.index("| --- | --- |"):].splitlines()[1:4]
    assert rows[0].startswith("| What is wrong | your scores equal Q·Kᵀ without the 1/√"), rows
    assert rows[1].startswith("| Your variable |") and "scores&#95;<wbr>pre&#95;<wbr>mask" in rows[1]
    assert rows[2].startswith("| Marked at |") and "py&#58;<wbr>83" in rows[2]


@pytest.mark.parametrize(("message", "shown"), [
    ('the projection with `p["proj"]` applied', "the projection with <code>p&#91;&#34;proj&#34;&#93;</code> applied"),
    ("`a` and `b_c`", "<code>a</code> and <code>b&#95;c</code>"),
    ("no code, a lone ` tick | pipe", "no code, a lone &#96; tick &#124; pipe"),
])
def test_a_diagnosis_shows_its_code_spans_as_code_in_a_cell_of_escaped_text(message, shown):
    from transformer_trace.text import text_with_code

    assert text_with_code(message) == shown


MERGED_STRAIGHT = ("linear(attn_ctx.transpose(1, 2).reshape(B, N, C), p[\"proj\"])",
                   "linear(attn_ctx.reshape(B, N, C), p[\"proj\"])")


def test_a_failing_page_and_the_overview_show_the_students_code_in_what_is_wrong_as_code_not_backticks(tmp_path, capfd):
    source = (ROOT / "examples" / "vit_trace.py").read_text(encoding="utf-8")
    assert source.count(MERGED_STRAIGHT[0]) == 1
    (tmp_path / "vit.py").write_text(source.replace(*MERGED_STRAIGHT), encoding="utf-8")
    assert main(["trace", str(tmp_path / "vit.py"), "--out", str(tmp_path / "docs"), "--name", "ann", "-q"]) == 1
    capfd.readouterr()
    page = (tmp_path / "docs" / "ann" / "block" / "15-mha-output-concat-projection.md").read_text(encoding="utf-8")
    overview = (tmp_path / "docs" / "ann" / "index.md").read_text(encoding="utf-8")
    for wrong in (next(row for row in page.splitlines() if row.startswith("| What is wrong |")),
                  next(row for row in overview.splitlines() if row.startswith("| First failing snapshot"))):
        assert "with <code>p&#91;&#34;proj&#34;&#93;</code> applied to attn&#95;ctx" in wrong and "&#96;" not in wrong


@pytest.fixture(scope="module")
def class_site(traced_docs) -> Path:
    class_docs = traced_docs
    (class_docs.parent / "mkdocs.yml").write_text(
        "site_name: Course\ntheme:\n  name: material\n  font: false\n"
        "plugins:\n  - search\n  - transformer-trace:\n      generate: false\n", encoding="utf-8")  # as `new` writes it
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q"], cwd=class_docs.parent, text=True,
                           capture_output=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
    assert built.returncode == 0, built.stderr[-3000:]
    return class_docs.parent / "site"


# Where a name's rendered lines break: the text before each line break, per name (Range rects, one per character).
# A trace's table also holds code that is no name: a name has a separator; a file's sha256 (none) may break anywhere,
# and a block of source lines breaks at its own line ends.
LINE_BREAKS = """([selector, namesOnly]) => Array.from(document.querySelectorAll(selector))
    .filter(el => !namesOnly || (el.textContent.includes('_') && !el.textContent.includes('\\n'))).map(el => {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), chars = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode())
        for (let i = 0; i < node.length; i++) {
            const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1);
            const rect = range.getClientRects()[0]; if (rect) chars.push([node.data[i], rect.top]);
        }
    const before = [];
    for (let i = 1; i < chars.length; i++) if (chars[i][1] > chars[i - 1][1] + 2) before.push(chars[i - 1][0]);
    return before;
}).flat()"""


@pytest.mark.browser
@pytest.mark.parametrize("width", [390, 1280])
def test_the_class_page_fits_the_window_and_a_wide_heat_map_scrolls_in_its_own_box(class_site, browser, width):
    from transformer_trace.pdf import serve

    with serve(class_site) as url:
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(f"{url}/class/", wait_until="load")
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow} px at {width} px"
        box = page.evaluate("""() => { const box = document.querySelector('.class-heat').parentElement;
            return [getComputedStyle(box).overflowX, box.scrollWidth, box.clientWidth]; }""")
        assert box[0] == "auto"
        if width == 390:
            assert box[1] > box[2], "the heat map is wider than a phone: its box scrolls"
        assert set(page.evaluate(LINE_BREAKS, [".class-table a, .class-table th.student", False])) <= set("_-./@+ "), \
            "a name broke inside a word"
        assert page.locator("details.class-unmarked").count() == 1
        assert not page.locator("details.class-unmarked").evaluate("el => el.open")
        page.close()


# The trace's pages whose tables show the student's names: the overview, two stage tables, snapshots' first tables.
TRACE_PAGES = ["trace/", "trace/encoder/", "trace/decoder/", f"trace/{FAILING_PAGE}/",
               "trace/decoder/33-cross-attention-score-matrix-before-softmax/"]


@pytest.mark.browser
@pytest.mark.parametrize("width", [390, 1280])
def test_a_traced_reports_tables_break_the_students_names_only_after_their_separators(class_site, browser, width):
    from transformer_trace.pdf import serve

    with serve(class_site) as url:
        page = browser.new_page(viewport={"width": width, "height": 900})
        for path in TRACE_PAGES:
            page.goto(f"{url}/{path}", wait_until="load")
            overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{path} scrolls sideways by {overflow} px at {width} px"
            names = page.evaluate("""() => Array.from(document.querySelectorAll('.md-typeset table td code'))
                .filter(el => el.textContent.includes('_')).length""")
            assert names >= 2, f"{path}: no student's name in a table"
            breaks = page.evaluate(LINE_BREAKS, [".md-typeset table td code", True])
            assert set(breaks) <= set("_-./@+:, "), f"{path}: a name broke inside a word at {width} px"
        page.close()


def test_code_spans_in_a_students_messages_are_code_in_the_class_pages_html_cells_not_backticks(tmp_path):
    # Markdown inside the page's HTML tables is not rendered: a code span must be written as <code>, escaped
    docs = tmp_path / "docs"
    report = docs / "students" / "ann" / "report"
    student_report(report, failed="S12")
    data = json.loads((report / "snapshots.json").read_text(encoding="utf-8"))
    s12 = next(s for s in data["snapshots"] if s["label"] == "S12")
    s12["check"]["evidence"] = {"kind": "bug form", "name": "heads merged without moving `h` back",
                                "message": 'your `attn_out` is the projection with `p["proj"]` of `<b>x</b>`'}
    (report / "snapshots.json").write_text(json.dumps(data), encoding="utf-8")
    assert main(["class", str(docs / "class"), str(docs / "students" / "ann"), "-q"]) == 0
    page = (docs / "class" / "index.md").read_text(encoding="utf-8")
    tables = [page[start:page.index("</table>", start)] for start in range(len(page)) if page.startswith("<table", start)]
    assert tables and not any("`" in table for table in tables)
    failures, students = tables[0], tables[1]
    assert "<strong>heads merged without moving <code>h</code> back</strong>" in failures
    assert ('your <code>attn_out</code> is the projection with <code>p[&#34;proj&#34;]</code> of '
            "<code>&lt;b&gt;x&lt;/b&gt;</code>") in students
