"""A notebook traced as IPython runs it: a `from __future__` import in one cell holds for the cells after it (IPython's
compiler keeps the flags a cell set), not for the cells before it, and not only for its own cell."""

from __future__ import annotations

import json
from pathlib import Path

from transformer_trace.cli import main


def notebook(path: Path, *cells: str) -> Path:
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": text, "outputs": [],
                                           "execution_count": None} for text in cells],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def test_a_future_import_holds_for_the_later_cells_as_in_ipython(tmp_path, capsys):
    traced = notebook(
        tmp_path / "nb.ipynb",
        "def before(x: int): pass\nassert before.__annotations__['x'] is int  # evaluated: the import comes later",
        "from __future__ import annotations\ndef same(x: Undefined): pass",
        "import torch\ndef later(x: AlsoUndefined) -> None: pass\n"
        "assert later.__annotations__ == {'x': 'AlsoUndefined', 'return': 'None'}\n"
        "ok = torch.ones(1)  # trace: ok",
    )
    code = main(["trace", str(traced), "--out", str(tmp_path / "out"), "--name", "nb", "-q"])
    assert code == 0, capsys.readouterr().err
    data = json.loads((tmp_path / "out" / "nb" / "snapshots.json").read_text(encoding="utf-8"))
    assert [s["captured"] for s in data["snapshots"]] == [True]


def test_each_cell_compiles_with_the_futures_of_the_cells_before_it():
    from transformer_trace.trace.child import instrument, protocol

    cells = ["x = 1", "from __future__ import annotations", "def f(a: B): pass", "y = 2"]
    source = "\n".join([protocol.NOTEBOOK_HEADER.format(name="nb.ipynb"), "pass"] + [
        line for number, cell in enumerate(cells, 1) for line in (protocol.CELL_LINE.format(number=number), cell)])
    codes = instrument.compile_marked(source.encode(), "nb.py", None)
    annotations = __import__("__future__").annotations.compiler_flag
    assert [bool(code.co_flags & annotations) for code in codes] == [False, False, True, True, True]
