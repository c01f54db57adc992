"""A projection that reaches a marked head split only through other statements (Llama's ``xq, xk, xv = self.wq(x),
self.wk(x), self.wv(x)``, then a view, a key-value cache written in place and read back, and the marked
``values = values.transpose(1, 2)``): the statements feeding the marked line are followed back through the names and
module attributes each one reads (generator/trace/reading/feeders.py ``traced_back``), the child records that
projection's calls as it does a feeding statement's, and the reading keeps a call whose output the line's tensor holds
rearranged. So the head split is checked against the projection's own weights and input: V projected from the queries
(`self.wv(self.wq(x))`, round six's llama B7) is named at its split. A tiny script of our own, no upstream file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.trace.child.protocol import FED_AT, ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.feeders import as_read, feeding_statements, traced_back

SCRIPT = '''\\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 6, 16, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.query, self.key, self.value = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.out = nn.Linear(C, C)
        self.cache = torch.zeros(B, 2 * N, H, C // H)

    def forward(self, x):
        query, key, value = self.query(x), self.key(x), self.value(VALUE_INPUT)
        query = query.view(B, N, H, C // H)
        key = key.view(B, N, H, C // H)
        value = value.view(B, N, H, C // H)
        self.cache[:, :N] = value
        values = self.cache[:, :N]
        query = query.transpose(1, 2)  # BREAKPOINT S09
        key = key.transpose(1, 2)  # BREAKPOINT S10
        values = values.transpose(1, 2)  # BREAKPOINT S11
        scores = query @ key.transpose(-2, -1) / math.sqrt(C // H)  # BREAKPOINT S12
        probs = scores.softmax(-1)  # BREAKPOINT S13
        context = probs @ values  # BREAKPOINT S14
        return self.out(context.transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S15


attention = Attention().eval()
with torch.no_grad():
    attention(nn.LayerNorm(C)(torch.randn(B, N, C)))
'''


def test_a_projection_reached_through_a_view_and_a_cache_is_the_split_s_projection(tmp_path: Path):
    code, checks = traced(tmp_path, SCRIPT.replace("VALUE_INPUT", "x"))
    assert code == 0, checks[""]
    assert checks["S11"]["passed"] is True and "an unmarked statement before it called" in checks["S11"]["detail"]


def test_v_projected_from_the_queries_on_a_line_traced_back_to_is_named_at_its_split(tmp_path: Path):
    code, checks = traced(tmp_path, SCRIPT.replace("VALUE_INPUT", "self.query(x)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S11"), checks[""]
    assert checks["S11"]["evidence"]["name"] == "computed from another tensor", checks["S11"]


FORWARD = textwrap.dedent(SCRIPT[SCRIPT.index("    def forward"):SCRIPT.index("        scores =")])


def test_the_walk_back_follows_the_names_and_the_cache_written_in_place_to_the_projection():
    lines = FORWARD.splitlines()
    marked = next(i for i, line in enumerate(lines, 1) if "BREAKPOINT S11" in line)
    projection = next(i for i, line in enumerate(lines, 1) if "self.value(" in line)
    assert traced_back(FORWARD, marked, marked) == {projection}
    assert (projection, projection) in feeding_statements(FORWARD, marked, marked)


PROJECTED = torch.randn(2, 6, 16)


@pytest.mark.parametrize("read, traced_lines, kept", [
    (PROJECTED.reshape(2, 6, 2, 8).transpose(1, 2), frozenset({3}), True),  # traced back: its values, rearranged
    (PROJECTED.reshape(2, 6, 2, 8).transpose(1, 2), frozenset(), False),  # a feeder's own rearrangement: left out
    (torch.tanh(PROJECTED), frozenset({3}), False),  # changed on the way (a rotary embedding): not the step's
])
def test_a_traced_back_call_is_read_where_the_line_s_tensor_holds_its_output_rearranged(read, traced_lines, kept):
    call = ModuleCall("Linear", ModuleKind.LINEAR, 1, [torch.randn(2, 6, 16)], [PROJECTED], {}, {FED_AT: 3})
    local = ModuleCall("values", ModuleKind.LOCAL, 0, [], [read], {}, {})
    assert any(found is call for found in as_read((call, local), traced_lines)) == kept
