"""Residual sums made inside a module of the user's (issue 40: a planted bug is named at its own step).

A post-norm "add & norm" module (brandokoch's ``AddAndNorm(x, residual)``, forward ``layer_norm(x + residual)``):
the marked step is the LayerNorm of the sum the module made, so it is read with the module's arguments as the sum's
operands, the one equal to the captured stream as the stream, the other as the sublayer output. A stream zeroed
among the arguments, or dropped inside the module, is "residual dropped" at its own step; the same holds where the
line adds the tensors it read itself (``norm(attended + x)``). A single tensor normalised (``x = self.norm(x)``
after ``x = x + attended``) may be the sum itself: never called a dropped residual."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

ADD_AND_NORM = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C, H = 2, 7, 16, 2


class AddAndNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_norm = nn.LayerNorm(C)

    def forward(self, x, residual):
        return self.layer_norm(x + residual)


class EncoderBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(C, H, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(C, 4 * C), nn.ReLU(), nn.Linear(4 * C, C))
        self.add_norm_1, self.add_norm_2 = AddAndNorm(), AddAndNorm()
        self.norm = nn.LayerNorm(C)

    def forward(self, x):  # Snapshot #6 x
        attended = self.attn(x, x, x, need_weights=False)[0]
        x = self.add_norm_1(x, attended)  # Snapshot #15
        out = self.ffn(x)
        return self.add_norm_2(out, x)  # Snapshot #19


with torch.no_grad():
    EncoderBlock().eval()(torch.randn(B, S, C))
'''


def test_a_post_norm_step_made_inside_an_add_and_norm_module_is_read_from_its_arguments(tmp_path):
    code, checks = traced(tmp_path, ADD_AND_NORM)
    assert code == 0, checks[""]
    for label in ("#15", "#19"):
        assert checks[label]["passed"] is True, checks[label]
        assert checks[label]["name"] == "equals LayerNorm(input + sublayer output)", checks[label]
        assert "of the AddAndNorm the line called" in checks[label]["detail"], checks[label]


@pytest.mark.parametrize("changes, said", [
    # the stream zeroed among the arguments (brandokoch's B4) at #15; at #19 the line adds what it read itself
    ((("self.add_norm_1(x, attended)", "self.add_norm_1(attended, 0 * x)"),
      ("return self.add_norm_2(out, x)", "return self.norm(out + 0 * x)")),
     {"#15": "leaves out x (#6)", "#19": "leaves out x (#15)"}),
    # the module drops its first argument: the stream at #15, the MLP's output at #19 (called the other way round)
    ((("self.layer_norm(x + residual)", "self.layer_norm(residual)"),),
     {"#15": "leaves out x (#6)", "#19": "leaves out encoder.layers.0.mlp.out"}),
])
def test_an_operand_left_out_of_an_add_and_norm_is_named_residual_dropped_at_its_own_step(tmp_path, changes, said):
    source = ADD_AND_NORM
    for old, new in changes:
        source = source.replace(old, new)
    code, checks = traced(tmp_path, source)
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("#15"), checks[""]
    for label, left_out in said.items():
        assert checks[label]["evidence"]["name"] == "residual dropped", checks[label]
        assert left_out in checks[label]["evidence"]["message"], checks[label]


def test_a_post_norm_sum_the_line_normalises_itself_passes(tmp_path):
    """The line adds the tensors it read (the stream and the sublayer output); or the sum was made on the line before
    and the marked line normalises it: one tensor read, which may be the sum itself, is never a residual dropped."""
    source = ADD_AND_NORM.replace("x = self.add_norm_1(x, attended)", "x = self.norm(attended + x)").replace(
        "return self.add_norm_2(out, x)  # Snapshot #19", "x = x + out\n        return self.norm(x)  # Snapshot #19")
    code, checks = traced(tmp_path, source)
    assert code == 0, checks[""]
    assert checks["#15"]["passed"] is True and "as the line read it" in checks["#15"]["detail"], checks["#15"]
    assert checks["#19"]["passed"] is True, checks["#19"]
