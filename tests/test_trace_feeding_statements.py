"""The unmarked statements that feed a marked one (issue 40 point 4; round five's Sachinxmpl ViT, tests/trace_fresh/
ROUND5_VIT.md, B3): ``key = self.key(query)`` on an unmarked line above the marked head split ``key = key.view(...)``
projected K from the projected queries, and S10 passed, because the split line made no module call: K from the wrong
input is an affine map of the block's input all the same. The child now records the module calls of the unmarked
statements that assigned, from a call, the locals a marked line reads (generator/trace/reading/feeders.py,
trace/child/fed_calls.py ``Feeding``), so the head split is checked against that projection's weights and input, and
the q, k and v of one self-attention are checked to come from one input. A tiny script of our own, no upstream file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.trace.child.protocol import FED_AT, ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.feeders import as_read, feeding_statements

SCRIPT = '''\
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

    def forward(self, x):
        query = self.query(x)
        key = self.key(KEY_INPUT)
        value = self.value(x)
        query = query.view(B, N, H, C // H).transpose(1, 2)  # BREAKPOINT S09
        key = key.view(B, N, H, C // H).transpose(1, 2)  # BREAKPOINT S10
        value = value.view(B, N, H, C // H).transpose(1, 2)  # BREAKPOINT S11
        scores = query @ key.transpose(-2, -1) / math.sqrt(C // H)  # BREAKPOINT S12
        probs = scores.softmax(-1)  # BREAKPOINT S13
        context = probs @ value  # BREAKPOINT S14
        return self.out(context.transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S15


attention = Attention().eval()
with torch.no_grad():
    attention(nn.LayerNorm(C)(torch.randn(B, N, C)))
'''


def test_a_head_split_is_checked_against_the_projection_an_unmarked_statement_above_it_called(tmp_path: Path):
    code, checks = traced(tmp_path, SCRIPT.replace("KEY_INPUT", "x"))
    assert code == 0, checks[""]
    for label in ("S09", "S10", "S11"):
        assert checks[label]["passed"] is True
        assert "an unmarked statement before it called" in checks[label]["detail"]


def test_k_projected_from_another_input_on_an_unmarked_line_is_named_at_its_split(tmp_path: Path):
    code, checks = traced(tmp_path, SCRIPT.replace("KEY_INPUT", "query"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("S10")
    assert checks["S10"]["evidence"]["name"] == "computed from another tensor"
    assert "than S09 and S11 read" in checks["S10"]["evidence"]["message"]


BLOCK = '''\
def forward(self, x):
    b, n, _ = x.shape
    query = self.query(x)
    key = self.key(x)
    key = torch.tanh(key)
    if b:
        value = self.value(x)
    q = query.view(b, n, 2, -1)  # marked
    k = key.view(b, n, 2, -1)  # marked
    v = value.view(b, n, 2, -1)  # marked
'''


@pytest.mark.parametrize("line, feeders", [
    (8, [(3, 3)]),   # query assigned by a call; b and n by an attribute read (no call): not a feeder
    (9, [(5, 5), (4, 4)]),  # the nearest assignment of key, from a call; then the projection it came from, traced
                            # back (its call read only where the line's tensor holds its output's values: as_read)
    (10, []),        # value assigned inside an `if`: not a statement of the marked one's block
])
def test_the_feeding_statements_are_the_last_ones_of_the_block_that_assigned_what_the_line_reads_from_a_call(
        line: int, feeders: list[tuple[int, int]]):
    assert feeding_statements(BLOCK, line, line) == feeders


PROJECTED = torch.randn(2, 6, 16)


def _fed_linear(output: torch.Tensor) -> ModuleCall:
    return ModuleCall("Linear", ModuleKind.LINEAR, 1, [torch.randn(2, 6, 16)], [output], {}, {FED_AT: 3})


@pytest.mark.parametrize("read, kept", [
    (PROJECTED, True),                                   # `key = self.key(x)`: the line read the call's output
    (PROJECTED.reshape(2, 6, 2, 8).transpose(1, 2), False),  # `qkv = rearrange(self.qkv(x), ...)`: changed first
    (PROJECTED * 2, False),
])
def test_a_feeding_statements_call_is_read_only_where_the_line_read_its_output_as_it_is(read, kept):
    calls = (_fed_linear(PROJECTED), ModuleCall("key", ModuleKind.LOCAL, 0, [], [read], {}, {}))
    found = as_read(calls)
    assert any(call is calls[0] for call in found) == kept
    assert any(call is calls[1] for call in found)  # the line's own are all kept


def test_what_a_marked_statement_reads_follows_its_file_as_edited_between_two_specs(tmp_path):
    """The spec's locals and attribute reads are a pure function of the file's text (cached by it): an edit between two
    traces is read, never an earlier text's."""
    from transformer_trace.reports import REPORTS
    from transformer_trace.trace import numberings
    from transformer_trace.trace.markers import scan
    from transformer_trace.trace.reading.capture import marker_spec

    script = tmp_path / "script.py"
    specs = []
    for line in ("y = x @ w  # BREAKPOINT S10", "y = x @ self.weight + b  # BREAKPOINT S10"):
        script.write_text(f"x = w = b = 1\n{line}\n", encoding="utf-8")
        [marker] = scan([script], numberings(REPORTS))
        specs.append(marker_spec(marker, frozenset({10}), None))
    assert [(spec["locals"], spec["reads"]) for spec in specs] == [
        (["w", "x"], []), (["b", "self", "x"], ["self.weight"])]


@pytest.mark.parametrize("line, reads", [
    ("y = self.k_linear(x).view(2, -1)  # BREAKPOINT S10", []),  # a module the line calls: never a tensor
    ("y = x.transpose(1, 2)  # BREAKPOINT S10", []),  # a method the line calls
    ("y = self.cls_token.expand(2, -1, -1)  # BREAKPOINT S10", ["self.cls_token"]),  # the tensor whose method it calls
    ("y = self.w(x) + self.w  # BREAKPOINT S10", ["self.w"]),  # called, and read as it is too
    ("y = F.linear(x, self.proj.weight)  # BREAKPOINT S10", ["self.proj", "self.proj.weight"]),
])
def test_the_child_reads_no_attribute_that_the_line_only_calls(tmp_path, line, reads):
    """A chain read only as a call's function (``self.k_linear`` of ``self.k_linear(x)``) is a module or a method,
    never a weight passed to functional code: the child is not asked to read it at every hit."""
    from transformer_trace.reports import REPORTS
    from transformer_trace.trace import numberings
    from transformer_trace.trace.markers import scan
    from transformer_trace.trace.reading.capture import marker_spec

    script = tmp_path / "script.py"
    script.write_text(f"x = 1\n{line}\n", encoding="utf-8")
    [marker] = scan([script], numberings(REPORTS))
    assert marker_spec(marker, frozenset(), None)["reads"] == reads
