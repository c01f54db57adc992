"""For the classroom: `trace` exit statuses for CI, `--junit`, notebooks, and the class page of many students'
traces."""

from __future__ import annotations

import json
import shutil
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.test_junit import schema_errors
from transformer_trace.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ENCODER_DECODER = EXAMPLES / "encoder_decoder_trace.py"
VIT = EXAMPLES / "vit_trace.py"
NOTEBOOKS = sorted((EXAMPLES / "notebooks").glob("*.ipynb"))

# variant -> (example, text replaced, replacement, the first failing snapshot (pipeline order), exit status)
VARIANTS = {
    "ed-correct": (ENCODER_DECODER, "", "", None, 0),
    "ed-softmax-axis": (ENCODER_DECODER, "torch.softmax(scores_pre_mask, dim=-1)",
                        "torch.softmax(scores_pre_mask, dim=-2)", "#11", 1),
    "ed-no-scale": (ENCODER_DECODER, "q_heads @ k_heads.transpose(-2, -1) / math.sqrt(d_head)",
                    "q_heads @ k_heads.transpose(-2, -1)", "#10", 1),
    "ed-mask-sees-next": (ENCODER_DECODER, 'float("-inf")), diagonal=1)', 'float("-inf")), diagonal=2)', "#25", 1),
    "ed-residual-dropped": (ENCODER_DECODER, "layer_norm(res1_a + res1_b,", "layer_norm(res1_b,", "#15", 1),
    "ed-heads-not-moved-back": (ENCODER_DECODER, "return x.transpose(1, 2).reshape(B, L, h * hs)",
                                "return x.reshape(B, L, h * hs)", "#13", 1),
    "ed-positions-twice": (ENCODER_DECODER, "src_with_pos = src_embed + positional_encoding(S, D_MODEL)",
                           "src_with_pos = src_embed + positional_encoding(S, D_MODEL)"
                           " + positional_encoding(S, D_MODEL)", "#5", 1),
    "vit-correct": (VIT, "", "", None, 0),
    "vit-softmax-axis": (VIT, "attn_probs = attn_scores.softmax(dim=-1)", "attn_probs = attn_scores.softmax(dim=-2)",
                         "S13", 1),
    "vit-no-scale": (VIT, "k.transpose(-2, -1) / math.sqrt(C // HEADS)", "k.transpose(-2, -1)", "S12", 1),
    "vit-residual-dropped": (VIT, "x_after_attn = x_in + attn_out", "x_after_attn = attn_out", "S16", 1),
    "vit-script-fails": (VIT, "    x_block2_out = encoder_block(",
                         "    raise RuntimeError('unfinished')\n    x_block2_out = encoder_block(", None, 2),
}
HOSTILE = ["<img src=x onerror=alert(1)>", "bob\n`rm -rf`\n\n| a | b |", "chloé & [x](javascript:alert(1))"]
CLASS_SIZE = 24


def students() -> dict[str, str]:
    """Student name -> the variant they wrote: every variant at least twice, three hostile names among them."""
    names = [*HOSTILE, *(f"student-{i:02d}" for i in range(CLASS_SIZE - len(HOSTILE)))]
    variants = list(VARIANTS)
    return {name: variants[i % len(variants)] for i, name in enumerate(names)}


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> dict[str, tuple[int, dict, Path]]:
    """Each variant traced once (with --junit): variant -> (exit status, snapshots.json, its folder)."""
    root = tmp_path_factory.mktemp("variants")
    found = {}
    for name, (example, old, new, _, _) in VARIANTS.items():
        source = example.read_text(encoding="utf-8")
        assert not old or source.count(old) == 1, old
        script = root / "scripts" / name / example.name
        script.parent.mkdir(parents=True)
        script.write_text(source.replace(old, new) if old else source, encoding="utf-8")
        code = main(["trace", str(script), "--out", str(root / "out"), "--name", name, "-q",
                     "--junit", str(root / f"{name}.xml")])
        folder = root / "out" / name
        found[name] = (code, json.loads((folder / "snapshots.json").read_text(encoding="utf-8")), folder)
    return found


@pytest.fixture(scope="module")
def classroom(traced, tmp_path_factory) -> tuple[Path, dict, str]:
    """A class of 24 students (each a copy of their variant's report in a folder named after them) and its page."""
    docs = tmp_path_factory.mktemp("docs")
    folders = []
    for name, variant in students().items():
        target = docs / "students" / name / "report"
        shutil.copytree(traced[variant][2], target)
        folders.append(str(docs / "students" / name))
    assert main(["class", str(docs / "class"), *folders, "-q"]) == 0
    return docs, json.loads((docs / "class" / "class.json").read_text(encoding="utf-8")), \
        (docs / "class" / "index.md").read_text(encoding="utf-8")


def by_name(data: dict) -> dict[str, dict]:
    return {s["name"]: s for s in data["students"]}


# ----------------------------------------------------------------------------- exit status and JUnit

@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_exit_status_is_0_when_every_check_passed_1_when_one_failed_2_when_the_script_failed(traced, variant):
    code, data, _ = traced[variant]
    assert code == VARIANTS[variant][4]
    first = data["outcome"]["first_failure"]
    assert (first.split(" ")[0] if first else None) == VARIANTS[variant][3]


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    assert main(["trace", str(tmp_path / "missing.py"), "--out", str(tmp_path)]) == 2
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")  # no folder can be made where a file is
    assert main(["trace", str(VIT), "--out", str(tmp_path), "--junit", str(tmp_path / "notes.txt" / "t.xml")]) == 2
    assert not (tmp_path / "vit-trace").exists()  # refused before the script ran
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_junit_file_parses_and_counts_what_the_overview_counts(traced, variant, tmp_path_factory):
    code, data, folder = traced[variant]
    root = ET.parse(folder.parent.parent / f"{variant}.xml").getroot()
    assert root.tag == "testsuites" and [s.tag for s in root] == ["testsuite"]
    suite = root[0]
    cases = suite.findall("testcase")
    counts = data["outcome"]["counts"]
    script_case = 1 if code == 2 else 0
    assert len(cases) == len(data["snapshots"]) + script_case
    assert schema_errors(root) == []  # tests/test_junit.py: Jenkins' junit-10.xsd, and counts equal to the cases'
    for element in (root, suite):
        assert int(element.get("tests")) == len(cases)
        assert int(element.get("failures")) == counts["failed"] == len(suite.findall("testcase/failure"))
        assert int(element.get("errors")) == script_case == len(suite.findall("testcase/error"))
    skipped = counts["total"] - counts["captured"] + counts["unchecked"] + counts["unrecognised"]
    assert int(suite.get("skipped")) == skipped == len(suite.findall("testcase/skipped"))
    assert suite.get("name") == variant and {c.get("classname").split(".")[0] for c in cases} == {variant}
    unrecognised = [c for c in cases if (c.find("skipped") is not None
                                         and c.find("skipped").get("message").startswith("unrecognised:"))]
    assert len(unrecognised) == counts["unrecognised"]
    overview = (folder / "index.md").read_text(encoding="utf-8")
    checks = (f"**{counts['passed']} passed**, **{counts['failed']} failed**, {counts['unrecognised']} unrecognised, "
              f"{counts['unchecked']} not checkable")
    assert checks in overview
    for case in cases:
        assert case.get("classname") and case.get("name")
        for child in case:
            assert child.get("message")
    failures = [c for c in cases if c.find("failure") is not None]
    if VARIANTS[variant][3]:
        first = [c for c in failures if c.find("failure").get("message").startswith("first failure (pipeline order): ")]
        assert [c.get("name").split(" ")[0] for c in first] == [VARIANTS[variant][3]]


# ----------------------------------------------------------------------------- the class page

@pytest.mark.slow
def test_the_class_page_counts_every_snapshot_as_the_students_reports_do(classroom, traced):
    _, data, _ = classroom
    assert len(data["students"]) == CLASS_SIZE
    expected: dict[tuple[str, str], dict[str, int]] = {}
    for variant in students().values():
        report = traced[variant][1]
        for snap in report["snapshots"]:
            counts = expected.setdefault((report["catalogue"], snap["label"]),
                                         {"passed": 0, "failed": 0, "unrecognised": 0, "not checkable": 0,
                                          "not captured": 0})
            passed = snap["check"]["passed"]
            counts["not captured" if not snap["captured"] else "passed" if passed else "failed" if passed is False
                   else "unrecognised" if snap["check"].get("status") == "unrecognised" else "not checkable"] += 1
    got = {(s["catalogue"], s["label"]): {k: s[k] for k in ("passed", "failed", "unrecognised", "not checkable",
                                                            "not captured")}
           for s in data["snapshots"]}
    assert got == expected
    wanted = {"passed": 0, "failed": 0, "script failed": 0, "no report": 0}
    for variant in students().values():
        wanted[{0: "passed", 1: "failed", 2: "script failed"}[VARIANTS[variant][4]]] += 1
    assert data["totals"] == wanted


@pytest.mark.slow
def test_each_students_first_failure_is_their_bugs_step(classroom):
    _, data, page = classroom
    rows = by_name(data)
    for name, variant in students().items():
        first = rows[name]["first_failure"]
        assert (first["label"] if first else None) == VARIANTS[variant][3], name
        assert rows[name]["status"] == {0: "passed", 1: "failed", 2: "script failed"}[VARIANTS[variant][4]]
    failed_script = next(n for n, v in students().items() if v == "vit-script-fails")
    assert "RuntimeError: unfinished" in rows[failed_script]["problem"]


@pytest.mark.slow
def test_the_common_failures_list_who_hit_them(classroom):
    _, data, _ = classroom
    hit: dict[tuple[str, str], set[str]] = {}  # a snapshot's failures, each bug form a group of its own
    for g in data["failures"]:
        hit.setdefault((g["catalogue"], g["label"]), set()).update(g["students"])
    for variant, (example, _, _, label, _) in VARIANTS.items():
        if label is None:
            continue
        catalogue = "vit" if example == VIT else "encoder-decoder"
        who = [name for name, v in students().items() if v == variant]
        assert set(who) <= hit[(catalogue, label)]
        assert any(set(who) <= set(g["students"]) and g["what is wrong"] for g in data["failures"]
                   if (g["catalogue"], g["label"]) == (catalogue, label)), f"{variant}: no group says what is wrong"
    sizes = [len(g["students"]) for g in data["failures"]]
    assert sizes == sorted(sizes, reverse=True)


@pytest.mark.slow
def test_students_names_are_data_everywhere_on_the_page(classroom):
    import markdown

    docs, _, page = classroom
    html = markdown.markdown(page, extensions=["md_in_html", "tables", "attr_list"])
    assert "<img" not in html and 'href="javascript' not in html and "<a href" not in page.split("## Failures")[0]
    unbroken = page.replace("<wbr>", "")  # names may break after their separators (tests/test_class_page_layout.py)
    assert "&lt;img src=x onerror=alert(1)&gt;" in unbroken
    assert "bob\\n`rm -rf`\\n\\n| a | b |" in unbroken  # one line: the newline cannot end the table's HTML block
    assert "students/%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E/report/" in page
    in_block = False
    for line in page.splitlines():  # every HTML block stays one block: no blank line inside a table
        in_block = (in_block or "<table" in line) and "</table>" not in line
        assert not (in_block and not line.strip())
    assert page.count('<tr><th class="student"><a href=') == CLASS_SIZE  # one heat-map row per student


@pytest.mark.slow
def test_every_link_of_the_class_page_leads_to_a_students_page(classroom):
    import re
    from urllib.parse import unquote

    docs, _, page = classroom
    links = set(re.findall(r'href="([^"]+)"', page))
    assert len(links) > CLASS_SIZE
    for link in links:
        target = (docs / "class" / unquote(link)).resolve()
        assert (target / "index.md").is_file() or target.with_suffix(".md").is_file(), link


def test_a_class_page_refuses_bad_input_in_one_line(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    for paths in (["missing"], ["notes.txt"]):
        assert main(["class", str(tmp_path / "class"), *(str(tmp_path / p) for p in paths)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err
    assert not (tmp_path / "class").exists()


BROKEN_REPORTS = {"truncated": '{"snapshots": [', "a-list": "[1, 2, 3]", "not-traced": '{"snapshots": []}',
                  "entries-lack-keys": '{"traced": true, "snapshots": [{"label": 5}]}',
                  "outcome-a-list": '{"traced": true, "snapshots": [], "outcome": []}'}


def test_one_students_broken_report_is_their_no_report_row_with_a_warning_and_the_others_are_graded(tmp_path,
                                                                                                    capsys):
    script = tmp_path / "values.py"
    script.write_text("import torch\nx = torch.ones(2)  # trace: x\n", encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "good"), "--name", "alice", "-q"]) == 0
    shutil.copytree(tmp_path / "good" / "alice", tmp_path / "good" / "bob")
    good = [tmp_path / "good" / "alice", tmp_path / "good" / "bob"]
    for name, text in BROKEN_REPORTS.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "snapshots.json").write_bytes(text.encode())
    (tmp_path / "binary").mkdir()
    (tmp_path / "binary" / "snapshots.json").write_bytes(bytes(range(256)))
    broken = [*BROKEN_REPORTS, "binary"]
    out = tmp_path / "class"
    assert main(["class", str(out), *map(str, good), *(str(tmp_path / b) for b in broken), "-q"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == len(broken) and err.count("is shown as no report") == len(broken)
    assert "Traceback" not in err
    found = json.loads((out / "class.json").read_text(encoding="utf-8"))
    assert found["totals"]["no report"] == len(broken)
    assert sum(found["totals"][s] for s in ("passed", "failed", "script failed")) == len(good)
    page = (out / "index.md").read_text(encoding="utf-8")
    assert page.count("unreadable report") >= len(broken)


WROTE_NO_REPORT = {  # a student folder's JUnit file, as `trace --junit` wrote it without a report -> their row
    "refused": ("bad input", "model.py: no breakpoint comment found",
                "the trace was refused: model.py: no breakpoint comment found"),
    "stopped": ("interrupted", "the trace was stopped by SIGTERM (a CI job's timeout or cancel) before it ended",
                "the trace was stopped by SIGTERM (a CI job's timeout or cancel) before it ended"),
    "internal error": ("internal error", "internal error: KeyError: 'x'", "internal error: KeyError: 'x'"),
}


@pytest.mark.parametrize("ending", WROTE_NO_REPORT)
def test_a_student_whose_trace_wrote_no_report_is_no_report_with_why_as_their_junit_file_says(tmp_path, ending):
    from transformer_trace.trace.junit import Whose, refusal_tree, write_junit

    kind, why, said = WROTE_NO_REPORT[ending]
    folder = tmp_path / "students" / "dan"
    write_junit(refusal_tree(Whose("dan", folder / "model.py", tmp_path), why, kind), folder / "junit.xml")
    assert main(["class", str(tmp_path / "class"), str(folder), "-q"]) == 0
    dan = json.loads((tmp_path / "class" / "class.json").read_text(encoding="utf-8"))["students"][0]
    assert dan["status"] == "no report" and dan["problem"] == said


@pytest.mark.parametrize("folders, warned", [(["alice", "<img src=x onerror=alert(1)>", "o'brien"], 2),
                                              (["alice", "chloé-n"], 0)])
def test_a_class_warns_in_one_line_of_folder_names_mkdocs_own_navigation_would_print_as_html(tmp_path, capsys,
                                                                                          folders, warned):
    for folder in folders:
        (tmp_path / folder).mkdir()
    assert main(["class", str(tmp_path / "class"), *(str(tmp_path / f) for f in folders), "-q"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == (1 if warned else 0) and "Traceback" not in err
    if warned:
        assert err.startswith(f"warning: {warned} student folder name(s) hold HTML's characters ('<img src=x ")
        assert "transformer-trace plugin" in err and "a nav that leaves the students' folders out" in err


@pytest.mark.slow
def test_a_class_of_200_builds_in_under_10_seconds(traced, tmp_path):
    variants = list(VARIANTS)
    folders = []
    for i in range(200):
        folder = tmp_path / "students" / f"s{i:03d}"
        folder.mkdir(parents=True)
        shutil.copyfile(traced[variants[i % len(variants)]][2] / "snapshots.json", folder / "snapshots.json")
        folders.append(str(folder))
    started = time.perf_counter()
    assert main(["class", str(tmp_path / "class"), *folders, "-q"]) == 0
    assert time.perf_counter() - started < 10
    assert len(json.loads((tmp_path / "class" / "class.json").read_text(encoding="utf-8"))["students"]) == 200


# ----------------------------------------------------------------------------- notebooks

@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_an_example_notebook_traces_with_no_failed_check(tmp_path, notebook):
    assert main(["trace", str(notebook), "--out", str(tmp_path), "--name", "nb", "-q"]) == 0
    data = json.loads((tmp_path / "nb" / "snapshots.json").read_text(encoding="utf-8"))
    assert [s["label"] for s in data["snapshots"] if s["check"]["passed"] is False] == []
    assert sum(s["check"]["passed"] is True for s in data["snapshots"]) >= 1
    assert data["title"] == f"Trace of {notebook.name}"
    assert all(f"{notebook.name}, cell " in s["source"]["location"] for s in data["snapshots"] if s["captured"])
    assert (tmp_path / "nb" / "notebooks" / notebook.name).is_file()  # made safe: test_published_notebook.py
    assert {"title": "Your notebook", "page": f"notebooks/{notebook.name}"} in data["extra_pages"]
    assert not list(notebook.parent.glob(".*.trace.py"))  # the script it ran is gone


def _notebook(path: Path, *cells: tuple[str, str]) -> Path:
    path.write_text(json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": text, **(
        {"outputs": [], "execution_count": None} if kind == "code" else {})} for kind, text in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def test_a_notebooks_magics_are_skipped_and_listed_and_its_pages_give_cell_and_line(tmp_path):
    from transformer_trace.trace.notebook import to_script

    notebook = _notebook(tmp_path / "my nb.ipynb",
                         ("markdown", "# A title"),
                         ("code", "%matplotlib inline\nimport torch\n!pip install nothing\nfiles = !ls"),
                         ("code", "%%bash\necho hello # BREAKPOINT S13"),
                         ("code", "%%time\ntorch.manual_seed(0)\nscores = torch.randn(1, 2, 5, 5)\n"
                                  "if True:\n    %time x = 1\n"
                                  "probs = scores.softmax(dim=-1)  # BREAKPOINT S13\ndisplay(probs.shape)"))
    skipped = [(s.cell, s.line) for s in to_script(notebook).skipped]
    assert skipped == [(2, 1), (2, 3), (2, 4), (3, 1), (4, 1), (4, 5)]
    assert main(["trace", str(notebook), "--out", str(tmp_path / "out"), "--name", "nb", "-q"]) == 0
    data = json.loads((tmp_path / "out" / "nb" / "snapshots.json").read_text(encoding="utf-8"))
    probs = next(s for s in data["snapshots"] if s["label"] == "S13")
    assert probs["captured"] and probs["source"]["location"] == "my nb.ipynb, cell 4, line 6"
    page = (tmp_path / "out" / "nb" / probs["page"]).read_text(encoding="utf-8")
    assert 'title="my nb.ipynb, cell 4, line 6"' in page and 'linenums="1"' in page
    overview = (tmp_path / "out" / "nb" / "index.md").read_text(encoding="utf-8")
    assert "| cell 2, line 3 | <code>&#33;pip install nothing</code> | a shell command |" in overview
    assert "(notebooks/my%20nb.ipynb)" in overview


def test_a_notebook_whose_cell_fails_exits_2_and_names_the_cell(tmp_path, capsys):
    notebook = _notebook(tmp_path / "nb.ipynb", ("code", "import torch\nscores = torch.randn(1, 2, 5, 5)"),
                         ("code", "probs = scores.softmax(dim=-1)  # BREAKPOINT S13\n1 / 0"))
    assert main(["trace", str(notebook), "--out", str(tmp_path / "out"), "-q", "--junit", str(tmp_path / "j.xml")]) == 2
    assert "at nb.ipynb, cell 2, line 2" in capsys.readouterr().err
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert root.get("errors") == "1" and "ZeroDivisionError" in root.find("testsuite/testcase/error").get("message")


def test_a_file_that_is_not_a_notebook_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "x.ipynb").write_text("not json", encoding="utf-8")
    assert main(["trace", str(tmp_path / "x.ipynb"), "--out", str(tmp_path / "out")]) == 2
    assert "not a Jupyter notebook" in capsys.readouterr().err and not list(tmp_path.glob(".*.py"))


# ----------------------------------------------------------------------------- the documented workflows

@pytest.mark.parametrize("workflow", ["classroom-workflow.yml", "trace-junit-workflow.yml"])
def test_the_documented_workflows_parse_and_run_the_commands_the_readme_names(workflow):
    import yaml

    text = (EXAMPLES / workflow).read_text(encoding="utf-8")
    jobs = yaml.safe_load(text)["jobs"]
    steps = [step.get("run", "") for job in jobs.values() for step in job["steps"]]
    assert any("python -m transformer_trace trace" in run and "--junit" in run for run in steps)
    assert workflow in (ROOT / "README.md").read_text(encoding="utf-8")
    if workflow == "classroom-workflow.yml":
        assert "matrix" in jobs["trace"]["strategy"] and jobs["trace"]["strategy"]["fail-fast"] is False
        assert jobs["class-page"]["if"] == "always()" and any("python -m transformer_trace class" in run for run in steps)


def test_a_cell_that_is_python_keeps_a_line_that_starts_with_a_percent_sign(tmp_path):
    from transformer_trace.trace.notebook import to_script

    notebook = _notebook(tmp_path / "nb.ipynb", ("code", "x = (7\n     % 4)  # modulo, not a magic"))
    converted = to_script(notebook)
    assert converted.skipped == [] and "     % 4)  # modulo, not a magic" in converted.text


@pytest.mark.parametrize("cell, kept, skipped", [
    ('!echo hi\ntext = """\n!important: a string line\n%also\n"""', '"""\n!important: a string line\n%also\n"""',
     [(2, 1)]),
    ("%matplotlib inline\nn = 3\nx = (7\n% n)", "x = (7\n% n)", [(2, 1)]),
    ("if True:\n    !ls\n    y = [1,\n!2]", "    y = [1,\n!2]", [(2, 2)]),
    ("files = !ls\nz = {'a':\n  % 2}", "z = {'a':\n  % 2}", [(2, 1)]),
])
def test_magics_are_told_apart_by_the_tokenizer_not_by_a_lines_first_character(tmp_path, cell, kept, skipped):
    from transformer_trace.trace.notebook import to_script

    converted = to_script(_notebook(tmp_path / "nb.ipynb", ("markdown", "# t"), ("code", cell)))
    assert kept in converted.text and [(s.cell, s.line) for s in converted.skipped] == skipped


def test_a_top_level_await_cell_runs_as_ipythons_autoawait_runs_it_in_an_event_loop_the_cells_share(tmp_path):
    """IPython compiles each cell with a top-level await allowed and runs its coroutine to the end; a cell without one
    runs outside the loop (asyncio.run works there), and the loop is the same one from cell to cell."""
    notebook = _notebook(tmp_path / "nb.ipynb",
                         ("code", "import asyncio\nasync def doubled(v):\n    await asyncio.sleep(0)\n    return [v, v]"),
                         ("code", "%matplotlib inline\npairs = await doubled(3)  # trace: pairs\n"
                                  "loop = asyncio.get_running_loop()"),
                         ("code", "plain = asyncio.run(doubled(4))  # trace: plain"),
                         ("code", "async with asyncio.timeout(5):\n    again = asyncio.get_running_loop() is loop"
                                  "  # trace: again"))
    assert main(["trace", str(notebook), "--out", str(tmp_path / "out"), "--name", "nb", "-q"]) == 0
    data = json.loads((tmp_path / "out" / "nb" / "snapshots.json").read_text(encoding="utf-8"))
    points = {s["variable"]: s for s in data["snapshots"]}
    assert points["pairs"]["source"]["location"] == "nb.ipynb, cell 2, line 2"
    assert [points[name]["captured"] for name in ("pairs", "plain", "again")] == [True] * 3
    import numpy as np
    assert [np.load(tmp_path / "out" / "nb" / "data" / name).tolist() for name in
            ("01_pairs.npy", "02_plain.npy", "03_again.npy")] == [[3, 3], [4, 4], [True]]


def test_an_error_in_an_awaited_cell_names_the_cells_and_lines_of_its_frames_not_the_event_loops(tmp_path, capsys):
    notebook = _notebook(tmp_path / "nb.ipynb", ("code", "x = [1]  # trace: x\nasync def failing():\n    1 / 0"),
                         ("code", "import asyncio\nawait failing()"))
    assert main(["trace", str(notebook), "--out", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "error: the script failed: ZeroDivisionError: division by zero (at nb.ipynb, cell 1, line 3: 1 / 0)" in err
    assert 'File "nb.ipynb, cell 2, line 2", in <module>' in err and "asyncio" not in err.replace("import asyncio", "")


def test_get_ipython_runs_the_matplotlib_magic_and_names_the_cell_of_one_it_cannot_run(tmp_path, capsys):
    notebook = _notebook(tmp_path / "nb.ipynb",
                         ("code", "get_ipython().run_line_magic('matplotlib', 'inline')\nx = [1]  # trace: x"),
                         ("code", "get_ipython().run_line_magic('timeit', 'x')"))
    assert main(["trace", str(notebook), "--out", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "error: the script failed: RuntimeError: get_ipython().run_line_magic('timeit', ...): IPython magics do " \
           "not run under trace (at nb.ipynb, cell 2, line 1:" in err and ".trace.py" not in err


def test_a_kernelspec_language_in_capitals_is_python_and_a_marker_never_reached_names_its_cell(tmp_path):
    notebook = _notebook(tmp_path / "nb.ipynb", ("markdown", "# t"),
                         ("code", "x = [1]  # trace: x\nif False:\n    y = [2]  # trace: y"))
    data = json.loads(notebook.read_text(encoding="utf-8"))
    notebook.write_text(json.dumps({**data, "metadata": {"kernelspec": {"language": "Python"}}}), encoding="utf-8")
    assert main(["trace", str(notebook), "--out", str(tmp_path / "out"), "--name", "nb", "-q"]) == 0
    [warning] = json.loads((tmp_path / "out" / "nb" / "snapshots.json").read_text(encoding="utf-8"))["outcome"][
        "warnings"]
    assert warning == ("nb.ipynb, cell 2, line 3 '# trace: y' was never reached: the code around cell 2, line 3 ran, "
                       "but not that line (a branch, a loop or a return skipped it)")


@pytest.mark.slow
def test_in_a_built_site_the_class_pages_links_and_the_traced_notebooks_page_work(tmp_path):
    """MkDocs with the project's mkdocs-jupyter settings: the traced notebook is its report's page, and every link of
    the class page (raw HTML, so MkDocs leaves it as written) reaches a built page, whatever the student's name."""
    import re
    import subprocess
    import sys
    from urllib.parse import unquote

    docs = tmp_path / "docs"
    notebook = EXAMPLES / "notebooks" / "vit_tiny_seed003.ipynb"
    (docs / "students").mkdir(parents=True)
    assert main(["trace", str(notebook), "--out", str(docs / "students" / HOSTILE[0]), "--name", "report", "-q"]) == 0
    shutil.copytree(docs / "students" / HOSTILE[0], docs / "students" / "amina")
    assert main(["class", str(docs / "class"), str(docs / "students" / HOSTILE[0]), str(docs / "students" / "amina"),
                 "-q"]) == 0
    (docs / "index.md").write_text("# Home\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: class\nplugins:\n  mkdocs-jupyter:\n    execute: false\n    include: ['notebooks/*.ipynb']\n"
        "    ignore: ['*.md', '*.py']\nmarkdown_extensions: [md_in_html, tables, attr_list]\n"
        "nav: [{Home: index.md}, {Class: class/index.md}]\n", encoding="utf-8")  # MkDocs' own nav would title folders
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(tmp_path / "mkdocs.yml")], check=True,
                   env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True)
    site = tmp_path / "site"
    built_notebook = site / "students" / "amina" / "report" / "notebooks" / "vit_tiny_seed003" / "index.html"
    assert "PatchEmbedding" in built_notebook.read_text(encoding="utf-8")
    page = (site / "class" / "index.html").read_text(encoding="utf-8")
    shown = page.replace("<wbr>", "")  # a name's break points (after its separators) are not part of it
    assert "<img src=x" not in shown and "&lt;img src=x onerror=alert(1)&gt;" in shown
    links = set(re.findall(r'href="(\.\./students/[^"]+)"', page))
    assert len(links) == 2  # both passed: their overviews
    for link in links:
        assert (site / "class" / unquote(link) / "index.html").is_file(), link


@pytest.mark.parametrize("cell, message", [
    ("probs = scores.softmax(dim=-1)  # BREAKPOINT S99",
     "nb.ipynb, cell 2, line 1: 'BREAKPOINT S99': the ViT catalogue"),
    ("probs = scores.softmax(dim=-1)  # BREAKPOINT S13\ndef f(:", "nb.ipynb, cell 2, line 2: syntax error"),
])
def test_bad_input_in_a_notebook_names_its_cell_and_line(tmp_path, capsys, cell, message):
    notebook = _notebook(tmp_path / "nb.ipynb", ("code", "import torch\nscores = torch.randn(1, 2, 5, 5)"),
                         ("code", cell))
    assert main(["trace", str(notebook), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and ".trace.py" not in err and err.count("\n") == 1
    assert not list(tmp_path.glob(".*.py")) and not (tmp_path / "out" / "nb").exists()


@pytest.mark.parametrize("name, shown", [
    ("ann\nbob", "ann\\nbob"), ("evil\u202etxt.exe", "evil\\u202etxt.exe"), ("tab\there", "tab\\there"), ("zoë", "zoë")])
def test_a_students_name_is_shown_on_one_line_with_its_control_characters_visible(name, shown):
    from transformer_trace.classroom.page import shown as show

    assert show(name) == shown
