"""Markers as people write them: after a docstring or right under a `def` line, on a `def` line (the arguments at
entry), on a `for` line (the loop variable each pass), a slice after the marker, a word after it that is a title; a line
shared by several snapshots told apart by the module that runs it; and a marker never reached says why."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.errors import UserError
from transformer_trace.render import escape_text
from transformer_trace.reports import REPORTS
from transformer_trace.trace import numberings
from transformer_trace.trace.capture import run_script, user_files
from transformer_trace.trace.markers import find_markers, scan


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def hits(script: Path) -> dict[str, list]:
    """Each marker's text -> its hits' values (name, values as lists)."""
    capture = run_script(script, [], scan(user_files(script), numberings(REPORTS)), None)
    assert capture.finished, capture.error
    return {marker.text: [[(v.name, v.tensor.tolist() if v.tensor is not None else v.note) for v in hit.values]
                          for hit in found] for marker, found in capture.hits.items()}


def test_a_marker_after_a_docstring_or_right_under_a_def_line_marks_the_first_statement_of_the_body(tmp_path):
    script = write(tmp_path, "documented.py", """\
        def first(x):
            return [x]
        def second(x):
            \"\"\"Scale.

            Twice.\"\"\"
            # trace: after_docstring
            doubled = [x, x]
            return doubled
        def third(x):
            # trace: under_def
            tripled = [x, x, x]
            return tripled
        def fourth(x):
            \"\"\"Negate.\"\"\"  # trace: on_docstring
            negated = [-x]
            return negated
        first(0), second(1), third(2), fourth(3)
    """)
    assert hits(script) == {"# trace: after_docstring": [[("doubled", [1, 1])]],
                            "# trace: under_def": [[("tripled", [2, 2, 2])]],
                            "# trace: on_docstring": [[("negated", [-3])]]}


def test_a_numbered_marker_after_a_docstring_marks_the_assignment_after_it(tmp_path):
    script = write(tmp_path, "scores.py", """\
        def attention(q, k):
            \"\"\"Scores of every query against every key.\"\"\"
            # Snapshot #10
            scores = q @ k
            return scores
    """)
    [marker] = find_markers(script, numberings(REPORTS))
    assert (marker.number, marker.names, marker.first) == (10, ("scores",), 4)


def test_a_marker_on_a_def_line_reads_the_arguments_as_the_function_is_entered(tmp_path):
    script = write(tmp_path, "entry.py", """\
        import functools
        @functools.lru_cache(maxsize=None)
        def scale(ids, factor):  # trace: entry
            ids = tuple(i * factor for i in ids)
            return ids
        class Block:
            def forward(self, x):  # trace: block
                return x
        scale((1, 2), 3)
        Block().forward([4, 5])
    """)
    assert hits(script) == {"# trace: entry": [[("ids", [1, 2]), ("factor", 3)]], "# trace: block": [[("x", [4, 5])]]}


def test_a_marker_on_a_for_line_reads_the_loop_variable_each_pass_and_not_once_more_as_the_loop_ends(tmp_path):
    script = write(tmp_path, "loop.py", """\
        for step in [[1], [2], [3]]:  # trace: step
            if step == [2]:
                continue
            total = step
        after = 0
    """)
    assert hits(script) == {"# trace: step": [[("step", [1])], [("step", [2])], [("step", [3])]]}


def test_a_slice_after_the_marker_captures_that_slice_under_its_variables_name(tmp_path):
    script = write(tmp_path, "sliced.py", """\
        import torch
        bias = torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8)
        T = 3
        att = bias.sum()  # trace: mask bias[:, :, :T, :T]
    """)
    [[(name, values)]] = hits(script)["# trace: mask bias[:, :, :T, :T]"]
    assert name == "bias" and values == [[[[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]]]


def test_the_gpt_marker_with_a_slice_after_it_names_the_slice(tmp_path):
    script = write(tmp_path, "gpt.py", "att = q @ k  # BREAKPOINT G12 bias[:, :, :T, :T]\n")
    [marker] = find_markers(script, numberings(REPORTS))
    assert marker.number == 12 and marker.names == ("bias[:, :, :T, :T]",)


@pytest.mark.parametrize("written", ["x[__import__('os').system('true')]", "x[lambda: 1]"])
def test_a_slice_that_would_run_code_is_refused_in_one_line(tmp_path, written):
    script = write(tmp_path, "unsafe.py", f"y = 1  # trace: p {written}\n")
    with pytest.raises(UserError, match="a slice may use names, numbers"):
        find_markers(script, numberings(REPORTS))


def test_a_word_after_the_marker_that_is_no_variable_is_a_title_and_the_line_is_captured(tmp_path):
    script = write(tmp_path, "titled.py", "x = [1, 2]  # trace: p embeddings\n")
    assert hits(script) == {"# trace: p embeddings": [[("x", [1, 2])]]}


def test_a_marker_never_reached_says_why_on_the_overview(tmp_path):
    (tmp_path / "helper.py").write_text("z = [3]  # trace: helper_z\n", encoding="utf-8")
    script = write(tmp_path, "partly.py", """\
        if False:
            import helper
        def never_called():
            y = [2]  # trace: y
        x = [1]  # trace: x
        if x == [0]:
            w = [0]  # trace: w
    """)
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"]) == 0
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    warnings = data["outcome"]["warnings"]
    assert any("'# trace: y' was never reached: never_called() was never called" in w for w in warnings)
    assert any("'# trace: w' was never reached: the code around line 7 ran, but not that line" in w for w in warnings)
    assert any("'# trace: helper_z' was never reached: helper.py was never imported" in w for w in warnings)
    overview = (tmp_path / "out" / "t" / "index.md").read_text(encoding="utf-8")
    assert escape_text("never_called() was never called") in overview
