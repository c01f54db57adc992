"""`trace --junit`: files CI tools read as test reports, one suite per student, valid against the JUnit schema they read.

There is no internet here to fetch the schema, so ``schema_errors`` is a structural validator written from the one
GitLab's parser and the common GitHub Actions (mikepenz/action-junit-report, dorny/test-reporter) follow: Jenkins'
xunit `junit-10.xsd` (elements, their allowed children and attributes, the required ones), plus what that schema cannot
say and those tools rely on: counts that equal what the test cases hold, integers where counts are.
"""

from __future__ import annotations

import copy
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.trace.junit import Whose, junit_tree, refusal_tree, repository_root
from transformer_trace.trace.process import Terminated

# junit-10.xsd, element by element: the children it allows and its attributes (required ones in REQUIRED)
RESULT = {"children": set(), "attributes": {"type", "message"}}
SCHEMA = {
    "testsuites": {"children": {"testsuite"},
                   "attributes": {"name", "time", "tests", "failures", "disabled", "errors"}},
    "testsuite": {"children": {"testsuite", "properties", "testcase", "system-out", "system-err"},
                  "attributes": {"name", "tests", "failures", "errors", "time", "disabled", "skipped", "skips",
                                 "timestamp", "hostname", "id", "package", "assertions", "file", "skip", "log",
                                 "url"}},
    "properties": {"children": {"property"}, "attributes": set()},
    "property": {"children": set(), "attributes": {"name", "value"}},
    "testcase": {"children": {"skipped", "error", "failure", "system-out", "system-err"},
                 "attributes": {"name", "assertions", "time", "timestamp", "classname", "status", "class", "file",
                                "line", "log", "group", "url"}},
    "failure": RESULT, "error": RESULT, "skipped": RESULT,
    "system-out": {"children": set(), "attributes": set()}, "system-err": {"children": set(), "attributes": set()},
}
REQUIRED = {"testsuite": {"tests"}, "property": {"name", "value"}, "testcase": {"name"}}
COUNTS = ("tests", "failures", "errors", "skipped")


def schema_errors(root: ET.Element) -> list[str]:
    """What in a JUnit document breaks junit-10.xsd's structure, or the counts CI tools add up; [] when valid."""
    errors = []
    if root.tag not in ("testsuites", "testsuite"):
        errors.append(f"root element {root.tag}")
    for element in root.iter():
        rules = SCHEMA.get(element.tag)
        if rules is None:
            errors.append(f"unknown element {element.tag}")
            continue
        errors += [f"{element.tag} has {child.tag}" for child in element if child.tag not in rules["children"]]
        errors += [f"{element.tag} has attribute {a}" for a in element.attrib if a not in rules["attributes"]]
        errors += [f"{element.tag} lacks {a}" for a in REQUIRED.get(element.tag, ()) if a not in element.attrib]
        if element.tag in ("properties", "property", "testsuites") and (element.text or "").strip():
            errors.append(f"{element.tag} holds text")
        errors += [f"{element.tag}.{a}={element.get(a)!r} is not a count" for a in COUNTS
                   if a in element.attrib and not element.get(a).isdigit()]
    if errors:  # the counts below are read as integers
        return errors
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        held = {"tests": len(cases), "failures": len(suite.findall("testcase/failure")),
                "errors": len(suite.findall("testcase/error")), "skipped": len(suite.findall("testcase/skipped"))}
        errors += [f"suite {suite.get('name')!r}: {a}={suite.get(a)} but {held[a]} held" for a in COUNTS
                   if a in suite.attrib and int(suite.get(a)) != held[a]]
    if root.tag == "testsuites":
        for a in ("tests", "failures", "errors"):
            total = sum(int(s.get(a, 0)) for s in root.findall("testsuite"))
            if a in root.attrib and int(root.get(a)) != total:
                errors.append(f"testsuites {a}={root.get(a)} but its suites hold {total}")
    return errors


def merged(*documents: ET.Element) -> ET.Element:
    """Several students' files as CI tools merge them: their testsuite elements under one testsuites."""
    root = ET.Element("testsuites")
    for document in documents:
        root.extend(copy.deepcopy(list(document.iter("testsuite"))))
    return root


def snapshots_json(failed: bool = True, notebook: bool = False, script_error: str | None = None,
                   raised_at: dict | None = None) -> dict:
    """A trace's snapshots.json, as much of it as the JUnit file reads: S12 failed (or passed), S13 not checkable,
    S14 not captured."""
    where = ({"path": "model.ipynb", "line": 46, "location": "model.ipynb, cell 8, line 9"} if notebook
             else {"path": "model.py", "line": 48, "marker_line": 49})  # the marker on its own line below
    snapshot = {"stage": "block", "captured": True, "source": where}
    return {
        "model": "report", "title": "Trace of model.py", "catalogue": "vit", "traced": True,
        "inputs": {"script": where["path"]},
        "outcome": {"first_failure": "S12 Attention scores" if failed else None, "error": script_error,
                    **({"error_at": raised_at} if raised_at else {})},
        "snapshots": [
            {**snapshot, "label": "S12", "title": "Attention scores",
             "check": {"name": "equals Q·Kᵀ / √hs", "passed": not failed,
                       "detail": "the scores equal Q·Kᵀ without the 1/√64 (= 0.1250) scaling" if failed else ""}},
            {**snapshot, "label": "S13", "title": "Attention probabilities",
             "check": {"name": "rows sum to 1", "passed": None, "detail": "needs the weights"}},
            {"label": "S14", "title": "Context per head", "stage": "block", "captured": False},
        ],
    }


@pytest.fixture
def repository(tmp_path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "submissions" / "alice").mkdir(parents=True)
    return tmp_path


def whose(repository: Path, student: str = "alice", script: str = "model.py") -> Whose:
    return Whose(student, repository / "submissions" / student / script, repository)


def test_the_suite_is_named_by_the_student_and_every_classname_starts_with_them(repository):
    root = junit_tree(snapshots_json(), whose(repository)).getroot()
    suite = root.find("testsuite")
    assert suite.get("name") == "alice" and root.get("name").startswith("alice: ")
    assert {case.get("classname") for case in suite.iter("testcase")} == {"alice.block"}


def test_file_and_line_are_relative_to_the_repository_root_and_the_line_is_the_markers(repository):
    cases = junit_tree(snapshots_json(), whose(repository)).getroot().findall(".//testcase")
    # the breakpoint comment's line (snapshots.json's marker_line), as "marked at" says it, not the statement's (48)
    assert (cases[0].get("file"), cases[0].get("line")) == ("submissions/alice/model.py", "49")
    assert cases[2].get("file") is None  # not captured: no marked line


def test_a_file_written_before_marker_lines_were_recorded_gives_the_statements_line(repository):
    data = snapshots_json()
    for snapshot in data["snapshots"]:
        snapshot.get("source", {}).pop("marker_line", None)
    assert junit_tree(data, whose(repository)).getroot().find(".//testcase").get("line") == "48"


def test_a_failure_leads_with_the_diagnosis_and_where(repository):
    failure = junit_tree(snapshots_json(), whose(repository)).getroot().find(".//failure")
    message = failure.get("message")
    assert message.startswith("first failure (pipeline order): S12 at submissions/alice/model.py:49: ")
    assert failure.text.endswith("marked at submissions/alice/model.py:49")
    assert "without the 1/√64" in message and "equals Q·Kᵀ / √hs" in failure.text


def test_a_notebooks_cases_name_the_notebook_and_its_cell_but_no_line_of_the_hidden_script(repository):
    case = junit_tree(snapshots_json(notebook=True), whose(repository, script="model.ipynb")).getroot().find(
        ".//testcase")
    assert case.get("file") == "submissions/alice/model.ipynb" and case.get("line") is None
    assert "cell 8, line 9" in case.find("failure").get("message")


@pytest.mark.parametrize("document", ["passed", "failed", "script failed", "notebook", "refused"])
def test_every_kind_of_file_is_valid_against_junit_10_xsd(repository, document):
    who = whose(repository)
    tree = refusal_tree(who, "model.py: no breakpoint comment found") if document == "refused" else junit_tree(
        snapshots_json(failed=document != "passed", notebook=document == "notebook",
                       script_error="ValueError: boom" if document == "script failed" else None), who)
    assert schema_errors(tree.getroot()) == []


RAISED = {  # where the script's error was raised in the student's code, as snapshots.json records it
    "script": ({"path": "lib/layers.py", "line": 12}, "submissions/alice/lib/layers.py", "12",
               "submissions/alice/lib/layers.py:12"),
    "notebook": ({"path": "model.ipynb", "location": "model.ipynb, cell 4, line 2"}, "submissions/alice/model.ipynb",
                 None, "submissions/alice/model.ipynb (model.ipynb, cell 4, line 2)"),
}


@pytest.mark.parametrize("kind", RAISED)
def test_a_script_that_raised_is_an_error_at_the_line_of_the_students_code_that_raised(repository, kind):
    raised, file, line, said = RAISED[kind]
    error = "IndexError: tuple index out of range (at layers.py:12: return x.shape[7])"
    root = junit_tree(snapshots_json(script_error=error, raised_at=raised), whose(repository)).getroot()
    case = root.find(".//testcase/error/..")
    assert (case.get("file"), case.get("line")) == (file, line)
    message = case.find("error").get("message")
    assert message.startswith(error)  # what is wrong first, then where
    assert message.endswith(f"raised at {said}, the traceback's last line in the student's code")
    assert schema_errors(root) == []


def test_a_script_that_stopped_without_a_line_of_its_own_names_the_script(repository):
    (repository / "submissions" / "alice" / "model.py").touch()
    root = junit_tree(snapshots_json(script_error="the script exited with status 3"), whose(repository)).getroot()
    case = root.find(".//testcase/error/..")
    assert case.get("file") == "submissions/alice/model.py" and case.get("line") is None and case.find("error").get("message") == "the script exited with status 3"


BREAKAGES = {
    "skipped on testsuites": (lambda root: root.set("skipped", "1"), "testsuites has attribute skipped"),
    "a wrong count": (lambda root: root.find("testsuite").set("failures", "3"), "failures=3 but 1 held"),
    "a nameless test case": (lambda root: root.find(".//testcase").attrib.pop("name"), "testcase lacks name"),
    "an element the schema lacks": (lambda root: ET.SubElement(root.find(".//testcase"), "passed"),
                                    "testcase has passed"),
    "a count that is not one": (lambda root: root.find("testsuite").set("tests", "3.0"), "is not a count"),
}


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_the_validator_finds_what_breaks_the_schema(repository, breakage):
    root = junit_tree(snapshots_json(), whose(repository)).getroot()
    breaks, found = BREAKAGES[breakage]
    breaks(root)
    assert any(found in error for error in schema_errors(root))


def test_a_merged_class_file_tells_the_students_apart(repository):
    files = [junit_tree(snapshots_json(failed=student != "bob"), whose(repository, student)).getroot()
             for student in ("alice", "bob")]
    files.append(refusal_tree(whose(repository, "chloé & co"), "model.py: no breakpoint comment found").getroot())
    class_file = ET.fromstring(ET.tostring(merged(*files)))  # written and read back, as CI reads it
    assert schema_errors(class_file) == []
    assert [suite.get("name") for suite in class_file] == ["alice", "bob", "chloé & co"]
    failing = [case.get("classname") for case in class_file.iter("testcase") if len(case)]
    assert {name.split(".")[0] for name in failing} == {"alice", "bob", "chloé & co"}


def test_the_repository_root_is_the_git_top_level_else_the_current_folder(repository, tmp_path_factory, monkeypatch):
    script = repository / "submissions" / "alice" / "model.py"
    assert repository_root(script) == repository.resolve()
    elsewhere = tmp_path_factory.mktemp("no-git")
    (elsewhere / "sub").mkdir()
    monkeypatch.chdir(elsewhere)
    assert repository_root(elsewhere / "sub" / "model.py") == elsewhere.resolve()


def test_a_refused_trace_and_a_report_name_their_suites_the_same_way(repository):
    traced = junit_tree(snapshots_json(), whose(repository)).getroot()
    refused = refusal_tree(whose(repository), "model.py: no breakpoint comment found").getroot()
    assert traced.get("name") == refused.get("name") == "alice: Trace of model.py"


def test_a_refused_trace_writes_its_junit_file_with_the_reason_as_an_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("x = 1  # no marker here\n", encoding="utf-8")
    code = main(["trace", "model.py", "--out", "docs/students/dan", "--name", "report", "--student", "dan",
                 "--junit", "docs/students/dan/junit.xml", "-q"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    root = ET.parse(tmp_path / "docs/students/dan/junit.xml").getroot()
    assert schema_errors(root) == []
    error = root.find(".//testcase/error")
    assert error.get("type") == "bad input" and error.get("message") in err
    assert root.find(".//testcase").get("classname") == "dan.script"
    assert not (tmp_path / "docs/students/dan/report").exists()


STOPS = {"Ctrl-C": (KeyboardInterrupt, 130, "by Ctrl-C"),
         "SIGTERM": (lambda: Terminated(143), 143, "by SIGTERM (a CI job's timeout or cancel)")}


@pytest.mark.parametrize("stop", STOPS)
def test_a_trace_stopped_by_ctrl_c_or_sigterm_writes_its_junit_file_with_an_error(tmp_path, capsys, monkeypatch,
                                                                                  stop):
    import transformer_trace.trace as trace_command

    raised, status, how = STOPS[stop]

    def stopped(*_):
        raise raised()

    monkeypatch.setattr(trace_command, "_trace_file", stopped)  # as the signal handlers raise while the script runs
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("x = 1  # BREAKPOINT S01\n", encoding="utf-8")
    argv = ["trace", "model.py", "--out", "docs", "--student", "dan", "--junit", "junit.xml", "-q"]
    if stop == "SIGTERM":  # the command ends with 128 + 15 (a SystemExit past main)
        with pytest.raises(SystemExit) as ended:
            main(argv)
        assert ended.value.code == status
    else:
        assert main(argv) == status
    root = ET.parse(tmp_path / "junit.xml").getroot()
    assert schema_errors(root) == [] and root.find("testsuite").get("name") == "dan"
    error = root.find(".//testcase/error")
    assert error.get("type") == "interrupted"
    assert error.get("message") == f"the trace was stopped {how} before it ended"


def test_an_empty_script_argument_is_refused_as_no_script_with_its_junit_file(tmp_path, capsys, monkeypatch):
    # the example classroom workflow's `trace "$script"` for a student who handed in no model file
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as refused:
        main(["trace", "", "--out", "out/dan", "--name", "report", "--student", "dan", "--junit", "out/dan/junit.xml"])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and err.count("\n") == 1 and "no script given" in err and "folder" not in err
    root = ET.parse(tmp_path / "out" / "dan" / "junit.xml").getroot()
    assert schema_errors(root) == [] and root.find("testsuite").get("name") == "dan"
    case = root.find(".//testcase")
    assert case.get("name") == "trace no script given" and case.get("file") is None
    assert "no script given" in case.find("error").get("message")


def test_a_refusal_of_the_junit_file_itself_writes_nothing(tmp_path, capsys):
    mine = tmp_path / "notes.xml"
    mine.write_text("<notes/>", encoding="utf-8")
    assert main(["trace", str(tmp_path / "missing.py"), "--out", str(tmp_path / "docs"), "--junit", str(mine)]) == 2
    assert mine.read_text(encoding="utf-8") == "<notes/>"


@pytest.mark.parametrize("argv, said", [
    (["--timeout", "abc"], "argument --timeout: expected seconds, not 'abc'"),
    (["--hit", "0"], "argument --hit"),
    (["--report", "bert"], "argument --report: invalid choice"),
], ids=["timeout", "hit", "report"])
def test_a_command_line_the_parser_refuses_still_writes_the_junit_file(tmp_path, capsys, monkeypatch, argv, said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("x = 1  # BREAKPOINT S01\n", encoding="utf-8")
    with pytest.raises(SystemExit) as refused:
        main(["trace", "model.py", *argv, "--student", "eve", "--junit", "out/eve.xml"])
    assert refused.value.code == 2 and capsys.readouterr().err.count("\n") == 1
    root = ET.parse(tmp_path / "out" / "eve.xml").getroot()
    assert schema_errors(root) == [] and root.find("testsuite").get("name") == "eve"
    error = root.find(".//testcase/error")
    assert said in error.get("message") and root.find(".//testcase").get("file") == "model.py"


# ----------------------------------------------------------------------------- the examples, traced

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PLANTED = {  # a bug each, so that the terminal names a failure and where it was marked
    "vit_trace.py": ("k.transpose(-2, -1) / math.sqrt(C // HEADS)", "k.transpose(-2, -1)"),
    "encoder_decoder_trace.py": ("torch.softmax(scores_pre_mask, dim=-1)", "torch.softmax(scores_pre_mask, dim=-2)"),
}


@pytest.mark.parametrize("example", sorted(PLANTED))
def test_junit_terminal_and_snapshots_json_give_one_line_for_each_marker(tmp_path, capfd, monkeypatch, example):
    # vit_trace.py marks with comments on their own line (the statement above: line + 1), encoder_decoder_trace.py at
    # the end of the statement: both read the same in every place a student or CI looks
    (tmp_path / ".git").mkdir()
    source = (EXAMPLES / example).read_text(encoding="utf-8")
    assert source.count(PLANTED[example][0]) == 1
    (tmp_path / example).write_text(source.replace(*PLANTED[example]), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["trace", example, "--out", "out", "--name", "t", "--junit", "junit.xml"]) == 1
    terminal = capfd.readouterr()
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    cases = {case.get("name").split(" ")[0]: case for case in ET.parse(tmp_path / "junit.xml").iter("testcase")}
    marked = {s["label"]: s["source"]["marker_line"] for s in data["snapshots"] if s.get("source")}
    assert len(marked) == len(data["snapshots"])
    assert {label: int(cases[label].get("line")) for label in marked} == marked
    first = data["outcome"]["first_failure"].split(" ")[0]
    said = f"marked at {example}:{marked[first]}"
    assert said in terminal.out + terminal.err and data["outcome"]["first_failure"].endswith(said)
    failure = cases[first].find("failure")
    assert failure.get("message").startswith(f"first failure (pipeline order): {first} at {example}:{marked[first]}: ")
    assert failure.text.endswith(said)


def test_a_crashed_script_gives_its_junit_error_the_line_that_raised_in_a_module_of_its_own(tmp_path, capfd,
                                                                                          monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "alice" / "lib").mkdir(parents=True)
    (tmp_path / "alice" / "lib" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "alice" / "lib" / "shapes.py").write_text(
        "def last_axis(t):\n    return t.shape[7]\n", encoding="utf-8")
    (tmp_path / "alice" / "model.py").write_text(
        "import torch\nfrom lib.shapes import last_axis\n\n"
        "x = torch.ones(2, 3)  # BREAKPOINT S01\nlast_axis(x)\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "alice/model.py", "--out", "out", "--junit", "junit.xml", "-q"]) == 2
    capfd.readouterr()
    case = next(case for case in ET.parse(tmp_path / "junit.xml").iter("testcase") if case.find("error") is not None)
    assert (case.get("file"), case.get("line")) == ("alice/lib/shapes.py", "2")
    assert "raised at alice/lib/shapes.py:2," in case.find("error").get("message")


def test_the_line_that_raised_is_the_students_not_an_environment_installed_in_their_folder(tmp_path, monkeypatch):
    # a .venv/ beside the script: torch's frames are there, below the student's folder, and are not theirs
    from transformer_trace.trace.child import bootstrap

    installed = tmp_path / ".venv" / "lib" / "site-packages" / "torchish.py"
    installed.parent.mkdir(parents=True)
    installed.write_text("def view(t):\n    raise RuntimeError('shape mismatch')\n", encoding="utf-8")
    (tmp_path / "model.py").write_text("def forward(t):\n    y = t + 1\n    return view(y)\n", encoding="utf-8")
    scope: dict = {}
    for file in (installed, tmp_path / "model.py"):
        exec(compile(file.read_text(encoding="utf-8"), str(file), "exec"), scope)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / ".venv"))
    try:
        scope["forward"](1)
    except RuntimeError as exc:
        text, where = bootstrap.describe(exc, str(tmp_path))
    assert where == [str(tmp_path / "model.py"), 3] and text.endswith("(at model.py:3: return view(y))")


def test_a_crashed_notebook_gives_its_junit_error_the_cell_and_line_that_raised(tmp_path, capfd, monkeypatch):
    (tmp_path / ".git").mkdir()
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": "import torch\nx = torch.ones(2, 3)  # BREAKPOINT S01"},
             {"cell_type": "markdown", "metadata": {}, "source": "Its last axis:"},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": "y = 1\nprint(x.shape[7])"}]
    (tmp_path / "model.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                      "nbformat_minor": 5}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "model.ipynb", "--out", "out", "--junit", "junit.xml", "-q"]) == 2
    capfd.readouterr()
    case = next(case for case in ET.parse(tmp_path / "junit.xml").iter("testcase") if case.find("error") is not None)
    assert (case.get("file"), case.get("line")) == ("model.ipynb", None)
    assert "raised at model.ipynb (model.ipynb, cell 3, line 2)," in case.find("error").get("message")
