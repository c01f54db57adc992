"""A form round five's fresh ViTs (tests/trace_fresh/ROUND5_VIT.md) wrote and `trace` misread: one residual line for
both sublayers of a block, marked as the README's marker table shows a shared line (``# BREAKPOINT S16 or S19``). It
was read as S16 at every hit (the MLP's residual sums filed as attention ones) and S19 never, without a word; now the
letter numberings take ``or`` as the encoder–decoder's ``# SNAPSHOT #7 or #21 or #30`` does: each hit goes to the
snapshot of the line that called it, and where one line calls it for both, no hit is assigned and the overview says
why, at the notebook's cell and line for a notebook. Tiny scripts of our own, no upstream file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import trace_source as traced
from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.trace import numberings
from transformer_trace.trace.markers import find_markers

BLOCK = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 5, 16, 2


def residual(x, sublayer):
    return x + sublayer(x)  # BREAKPOINT S16 or S19


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def attention(self, x):
        q, k, v = self.qkv(self.ln_1(x)).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        probs = (q @ k.transpose(-2, -1) / (C // H) ** 0.5).softmax(-1)
        out = self.proj((probs @ v).transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S15
        return out

    def mlp(self, x):
        out = self.fc2(torch.nn.functional.gelu(self.fc1(self.ln_2(x))))  # BREAKPOINT S18
        return out

    def forward(self, x):  # BREAKPOINT S08
CALLS
        return x


block = Block().eval()
with torch.no_grad():
    y = block(torch.randn(B, N, C))
'''
TWO_CALLERS = ("        x = residual(x, self.attention)\n"
               "        x = residual(x, self.mlp)")
ONE_CALLER = ("        for sublayer in (self.attention, self.mlp):\n"
              "            x = residual(x, sublayer)")


@pytest.mark.parametrize("marker", ["# BREAKPOINT S16 or S19", "# BREAKPOINT S16 / S19"])
def test_a_letter_marker_with_or_is_one_shared_line_not_its_first_snapshot_with_a_title(tmp_path: Path, marker: str):
    script = tmp_path / "m.py"
    script.write_text(f"x = 1\ny = x + 1  {marker}\n", encoding="utf-8")
    found = find_markers(script, numberings(REPORTS))
    assert [(m.number, m.alternatives) for m in found] == [(16, (16, 19))]


def test_a_shared_residual_line_called_from_two_lines_is_told_apart_by_its_callers(tmp_path: Path):
    code, checks = traced(tmp_path, BLOCK.replace("CALLS", TWO_CALLERS))
    assert code == 0, checks[""]
    assert checks["S16"]["passed"] is True, checks["S16"]
    assert checks["S19"]["passed"] is True, checks["S19"]
    assert "sum" in checks["S19"]["name"], checks["S19"]


def test_a_shared_residual_line_one_line_calls_for_both_sublayers_is_not_assigned_and_the_overview_says_why(
        tmp_path: Path):
    code, checks = traced(tmp_path, BLOCK.replace("CALLS", ONE_CALLER))
    assert code == 0, checks[""]
    assert "S16" not in checks and "S19" not in checks
    assert any("'BREAKPOINT S16 or S19' was called from 1 line" in w and "not assigned" in w
               for w in checks[""]["warnings"]), checks[""]["warnings"]


def test_in_a_notebook_the_overview_names_the_shared_lines_cell_and_line(tmp_path: Path):
    source = BLOCK.replace("CALLS", ONE_CALLER)
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": source.splitlines(keepends=True)}]
    notebook = tmp_path / "block.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                        encoding="utf-8")
    main(["trace", str(notebook), "--out", str(tmp_path / "out"), "--name", "t", "-q"])
    warnings = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))["outcome"]["warnings"]
    assert any(w.startswith("block.ipynb, cell 1, line 9: 'BREAKPOINT S16 or S19'") for w in warnings), warnings
    assert not any(".trace.py" in w for w in warnings), warnings
