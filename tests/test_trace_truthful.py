"""Trace pages that say what happened (issue 32, point 6): a value that is not a tensor a page can show is said to be
one, not a (0,) float32 that "DOES NOT MATCH"; the Arguments row is the script's argv as given, not a shell command
split at spaces; the Rerun command names no absolute path of the machine that built the site. (The refusals' wording,
--force and --name, and --out checked before the script runs: tests/test_trace_naming.py.)"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy
import pytest

from transformer_trace.cli import main


def traced(tmp_path: Path, source: str, *args: str) -> tuple[Path, dict]:
    script = tmp_path / "src" / "values.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(source, encoding="utf-8")
    docs = tmp_path / "project" / "docs"
    docs.parent.mkdir(parents=True, exist_ok=True)
    assert main(["trace", str(script.resolve()), "--out", str(docs), "--name", "t", "-q", *args]) == 0
    return docs / "t", json.loads((docs / "t" / "snapshots.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("value, said", [
    ("torch.ones(2, dtype=torch.complex64)", "complex tensor"),
    ("torch.ones(2, 3, device='meta')", "holds no values to show"),
    ("'hello'", "a str"),
])
def test_a_value_that_is_not_a_showable_tensor_is_said_to_be_one_not_a_mismatched_shape(tmp_path, value, said):
    report, data = traced(tmp_path, f"import torch\nx = {value}  # trace: x\n")
    snap = data["snapshots"][0]
    assert snap["layout"]["status"] == "absent"
    page = (report / snap["page"]).read_text(encoding="utf-8")
    shape_row = next(line for line in page.splitlines() if line.startswith("| Shape |"))
    assert "no tensor to compare" in shape_row and said in shape_row.replace("&#32;", " ")
    assert "DOES NOT MATCH" not in page and "`(0,)`" not in shape_row
    assert "float32" not in page.replace(" float32, which holds no values", "")  # a meta tensor's own dtype aside


def test_the_arguments_row_is_the_scripts_argv_as_given(tmp_path):
    report, _ = traced(tmp_path, "import torch\nx = torch.ones(2)  # trace: x\n", "--", "a b", "--", "c -- d")
    row = next(line for line in (report / "index.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| Arguments |"))
    assert row == "| Arguments | <code>a b</code> <code>&#45;&#45;</code> <code>c &#45;&#45; d</code> |"


def test_the_rerun_command_names_no_absolute_path_of_the_builder(tmp_path):
    report, _ = traced(tmp_path, "import torch\nx = torch.ones(2)  # trace: x\n")
    for page in report.rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        assert str(tmp_path) not in text and str(tmp_path).replace("/", "&#47;") not in text, page
    command = next(line for line in (report / "index.md").read_text(encoding="utf-8").splitlines()
                   if line.startswith("| Command |"))
    assert "values&#46;py" in command


def test_a_line_hit_thousands_of_times_writes_one_data_file_per_value_not_one_per_hit(tmp_path):
    loop = "import torch\nfor i in range(3000):\n    x = torch.full((2,), float(i))  # trace: x\n"
    report, _ = traced(tmp_path, loop)
    files = list((report / "data").glob("*.npy"))
    assert len(files) < 10, len(files)
    index = json.loads((report / "data" / "index.json").read_text(encoding="utf-8"))
    bundled = next(t for t in index["tensors"] if t["name"].startswith("hits_"))
    assert bundled["shape"] == [3000, 2]


def test_every_entry_of_a_dict_of_tensors_reaches_data_not_only_the_first(tmp_path):
    report, _ = traced(tmp_path, (
        "import torch\n"
        "named = {'a': torch.ones(2), 'b/x': torch.zeros(3), 'c': torch.arange(4.0)}  # trace: named\n"
        "numbered = {0: torch.ones(2), 1: torch.zeros(2), 2: torch.full((2,), 2.0)}  # trace: numbered\n"))
    index = json.loads((report / "data" / "index.json").read_text(encoding="utf-8"))
    shapes = {t["name"]: t["shape"] for t in index["tensors"]}
    assert {"hit1_named_named.a": [2], "hit1_named_named.b_x": [3], "hit1_named_named.c": [4]}.items() <= shapes.items()
    assert {f"hit1_numbered_numbered.{k}" for k in range(3)} <= shapes.keys()
    assert numpy.load(report / "data" / "hit1_numbered_numbered.2.npy").tolist() == [2.0, 2.0]


def test_the_page_of_a_dict_of_tensors_shows_every_entry_with_its_shape_values_and_statistics(tmp_path):
    report, data = traced(tmp_path, (
        "import torch\n"
        "named = {'a': torch.ones(2, 3), '<b>|x': torch.arange(4.0), 'c': torch.full((1,), -2.0)}  # trace: named\n"))
    page = (report / data["snapshots"][0]["page"]).read_text(encoding="utf-8")
    rows = [line for line in page.split("| key | shape · dtype |", 1)[1].splitlines()[2:5]]
    assert [html.unescape(row).split(" | ")[1:3] for row in rows] == [
        ["`(2, 3)` · `float32`", "<code>[:1, :3] = [[1.0000  1.0000  1.0000] ...]</code>"],
        ["`(4,)` · `float32`", "<code>[:4] = [0.0000, 1.0000, 2.0000, 3.0000]</code>"],
        ["`(1,)` · `float32`", "<code>[:1] = [-2.0000]</code>"],
    ]
    assert rows[0].startswith("| <code>a</code> |") and rows[2].startswith("| <code>c</code> |")
    assert "<b>" not in rows[1] and "&#60;b&#62;&#124;x" in rows[1]  # a key is the user's text: escaped, even a |
    assert rows[1].endswith(" | 0.0000 | 3.0000 | 1.5000 | 1.1180 |")  # min, max, mean, std of that entry
