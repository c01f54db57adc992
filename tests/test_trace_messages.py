"""What a trace says about values it kept no copy of, and about the run, is what happened (issue 32, point 6): one
value over the budget is named with its size (not "the captures already hold 512 MiB"), a meta tensor is a shape
without values, and each warning on the overview sits under a heading that says what it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.trace.reading import capture


def _trace(tmp_path: Path, source: str, capsys) -> tuple[dict, str, str]:
    script = tmp_path / "src" / "values.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(source, encoding="utf-8")
    code = main(["trace", str(script), "--out", str(tmp_path / "docs"), "--name", "t", "-q"])
    err = capsys.readouterr().err
    assert code in (0, 1, 2) and "Traceback" not in err and "internal error" not in err, err
    data = json.loads((tmp_path / "docs" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    overview = (tmp_path / "docs" / "t" / "index.md").read_text(encoding="utf-8")
    return data, overview, err


def _notes(tmp_path: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted((tmp_path / "docs" / "t" / "points").glob("*.md")))


def test_one_value_over_the_budget_is_named_with_its_size_and_later_ones_with_what_the_captures_hold(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(capture, "CAPTURE_BUDGET_BYTES", 2**20)
    _trace(tmp_path, "import torch, numpy\n"
                     "big = torch.zeros(2**19)  # trace: big\n"  # 2 MiB: alone over the 1 MiB budget
                     "half = torch.zeros(2**17 + 2**16)  # trace: half\n"  # 0.75 MiB: kept
                     "more = torch.zeros(2**17)  # trace: more\n"  # 0.5 MiB: over what is left
                     "array = numpy.zeros(2**18)  # trace: array\n", capsys)  # 2 MiB of float64
    notes = _notes(tmp_path).replace("&#46;", ".").replace("&#58;", ":")
    assert "this one value is 2.0 MiB, more than the 1.0 MiB a trace keeps" in notes
    assert "the captures already hold 0.8 MiB of the 1.0 MiB a trace keeps, and this value is 0.5 MiB" in notes
    assert "NumPy array" in notes and "which a page cannot show" not in notes
    assert "already hold 1.0 MiB" not in notes


def test_a_value_with_no_copy_shows_no_made_up_shape_values_or_statistics_only_what_it_is(tmp_path, capsys,
                                                                                             monkeypatch):
    """Over the budget: its note gives its shape; the overview, its page and snapshots.json give no shape (0,), no
    debugger view of nothing and no statistics of nothing."""
    monkeypatch.setattr(capture, "CAPTURE_BUDGET_BYTES", 2**20)
    data, overview, _ = _trace(tmp_path, "import torch\nbig = torch.zeros(512, 1024)  # trace: big\n", capsys)
    [entry] = data["snapshots"]
    assert entry["captured"] and entry["layout"]["status"] == "absent"
    assert "(512, 1024) float32" in entry["layout"]["note"]
    assert (entry["shape"], entry["dtype"], entry["first"], entry["stats"]) == (None, None, [], {})
    assert [t["shape"] for t in entry["tensors"]] == [None]
    page = _notes(tmp_path)
    assert "(0,)" not in page + overview and "debugger's array view" not in page and "| min | max |" not in page
    assert "| <code class=\"tt-name\">big</code> | none |" in overview


def test_a_meta_tensor_is_a_shape_without_values(tmp_path, capsys):
    _trace(tmp_path, "import torch\ntorch.set_default_device('meta')\nx = torch.ones(2, 3)  # trace: x\n", capsys)
    notes = _notes(tmp_path).replace("&#40;", "(").replace("&#41;", ")")
    assert "a meta tensor (2, 3) float32, which holds no values to show" in notes and "could not be copied" not in notes


@pytest.mark.slow
def test_a_copy_written_as_the_script_ends_ends_the_process_quietly(tmp_path, capfd):
    *_, err = _trace(tmp_path, "import torch\nx = torch.empty(100_000_000)  # trace: x\n", capfd)
    assert "terminate called" not in err


def test_each_warning_sits_under_a_heading_that_says_what_it_is(tmp_path, capsys):
    data, overview, _ = _trace(tmp_path, "import torch\na = torch.ones(2)  # trace: a\nif a.sum() < 0:\n"
                                         "    b = torch.ones(3)  # trace: b\n", capsys)
    headings = [line for line in overview.splitlines() if line.startswith("!!! warning")]
    assert headings == ['!!! warning "Marker not reached"'], headings
    not_reached = data["outcome"]["warnings"][0]
    assert "'# trace: b' was never reached: the code around line 4 ran, but not that line" in not_reached


def test_processes_left_running_have_a_heading_of_their_own(tmp_path, capsys):
    _, overview, _ = _trace(tmp_path, "import os, time, torch\na = torch.ones(2)  # trace: a\n"
                                      "if os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n",
                            capsys)
    assert '!!! warning "Processes left running"' in overview and "Not assigned" not in overview


@pytest.mark.parametrize("target", ["the script", "mkdocs.yml"])
def test_junit_refuses_a_file_of_the_users_that_is_not_a_junit_report_before_the_script_runs(tmp_path, capsys,
                                                                                              target):
    script = tmp_path / "values.py"
    script.write_text("import torch\nx = torch.ones(2)  # trace: x\n", encoding="utf-8")
    path = script if target == "the script" else tmp_path / "mkdocs.yml"
    if target == "mkdocs.yml":
        path.write_text("site_name: mine\n", encoding="utf-8")
    kept = path.read_text(encoding="utf-8")
    code = main(["trace", str(script), "--out", str(tmp_path / "docs"), "--name", "t", "--junit", str(path), "-q"])
    assert code == 2 and "is a file that is not a JUnit report" in capsys.readouterr().err
    assert path.read_text(encoding="utf-8") == kept and not (tmp_path / "docs").exists()


def test_junit_replaces_the_report_an_earlier_trace_wrote(tmp_path, capsys):
    script = tmp_path / "values.py"
    script.write_text("import torch\nx = torch.ones(2)  # trace: x\n", encoding="utf-8")
    for _ in range(2):
        main(["trace", str(script), "--out", str(tmp_path / "docs"), "--name", "t", "--junit",
              str(tmp_path / "junit.xml"), "-q"])
        assert "<testsuites" in (tmp_path / "junit.xml").read_text(encoding="utf-8"), capsys.readouterr().err


@pytest.mark.parametrize("comment", ["# trace: h[0]", "# trace: h[__import__('os').system('touch pwned')]",
                                     "# trace: <b>h</b>"])
def test_a_trace_comment_that_is_no_marker_is_refused_in_one_line_not_dropped(tmp_path, capsys, comment):
    script = tmp_path / "values.py"
    script.write_text(f"import torch\nh = torch.ones(2, 2)\nx = torch.ones(2)  # trace: x\ny = h  {comment}\n",
                      encoding="utf-8")
    code = main(["trace", str(script), "--out", str(tmp_path / "docs"), "--name", "t", "-q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: values.py:4: {comment!r}: a point is"), err
    assert not (tmp_path / "docs").exists() and not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("compiled", ["@torch.jit.script\ndef scale(x):", "def scale(x):"])
def test_a_marker_in_a_function_torchscript_compiles_is_not_said_to_have_run_in_a_child_process(tmp_path, capsys,
                                                                                              compiled):
    source = f"import torch\n{compiled}\n    y = x * 2  # trace: y\n    return y\n"
    if compiled == "def scale(x):":
        source += "scale = torch.jit.script(scale)\n"
    data, _, _ = _trace(tmp_path, source + "z = scale(torch.ones(2))  # trace: z\n", capsys)
    [not_reached] = data["outcome"]["warnings"]
    assert "scale() is compiled by torch.jit, whose compiled code runs no marker (trace it with PYTORCH_JIT=0)" in \
        not_reached and "child process" not in not_reached


# ----------------------------------------------------------------------------- a diagnosis in the student's names

VIT_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "vit_trace.py"
MERGE = 'linear(attn_ctx.transpose(1, 2).reshape(B, N, C), p["proj"])'
PROJECTIONS = {  # the heads merged back without moving their axis, through the projection each form calls
    "functional, weights from a dict": (
        (MERGE, 'linear(attn_ctx.reshape(B, N, C), p["proj"])'),
        'your attn_out (S15) is the projection with `p["proj"]` applied to attn_ctx (S14)'),
    "an nn.Linear": ((MERGE, 'p["proj_module"](attn_ctx.reshape(B, N, C))'),
                     "the input of the Linear your line called is attn_ctx (S14)"),
}


@pytest.mark.parametrize("form", sorted(PROJECTIONS))
def test_a_failure_of_the_projection_speaks_the_students_names_not_the_catalogues(tmp_path, capsys, form):
    (old, new), projection = PROJECTIONS[form]
    source = VIT_EXAMPLE.read_text(encoding="utf-8")
    assert source.count(old) == 1
    source = source.replace(old, new).replace('"proj": linear_params(WIDTH, WIDTH),',
                                              '"proj": linear_params(WIDTH, WIDTH), '
                                              '"proj_module": torch.nn.Linear(WIDTH, WIDTH),')
    script = tmp_path / "model.py"
    script.write_text(source, encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "docs"), "--name", "t"]) == 1
    terminal = capsys.readouterr().err
    data = json.loads((tmp_path / "docs" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    failed = next(s for s in data["snapshots"] if s["label"] == "S15")["check"]
    said = f'{failed["evidence"]["message"]} ({failed["name"]})'
    assert data["outcome"]["first_failure"].startswith(f"S15 MHA output (concat + projection): {said}")
    assert said in terminal
    assert failed["evidence"]["name"] == "heads merged without moving the axis back"
    assert projection in said
    assert "blocks." not in said and "@" not in said  # the catalogue's record names, the binding's own names
