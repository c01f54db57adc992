"""Round thirteen's fresh ViTs (tests/trace_fresh/ROUND13_VIT.md): the form behind the one step of theirs `trace` left
not checkable, held by a tiny script of our own (no upstream file).

- a pre-norm residual sum written on one line with its sublayer inline (`x = h + self.mlp(self.norm2(h))`, the MLP's
  output never named, its attention's output marked S15): the sublayer output is taken from the Linear the line called
  last, and where the sum does not add up with it the step was not checkable (something after the call may change
  it). Where one of the sum's bug forms fits exactly through that output (the stream added from the block input, the
  attention's output left out; the sublayer's output counted twice) the step is now failed with that form as its
  evidence, and the correct sum (with a dropout and a GELU inside the MLP, in eval mode) still passes.
"""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

# a pre-norm block: the attention's output marked (S15), both sums on one line each, the MLP inline in the second
INLINE_MLP_SUM = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 9, 16, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        q, k, v = self.qkv(x).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        attn = ((q @ k.transpose(-2, -1)) * (C // H) ** -0.5).softmax(dim=-1)
        x = self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S15
        return x


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(C)
        self.attention = Attention()
        self.norm2 = nn.LayerNorm(C)
        self.mlp = nn.Sequential(nn.Linear(C, 2 * C), nn.GELU(), nn.Dropout(0.1), nn.Linear(2 * C, C), nn.Dropout(0.1))

    def forward(self, x):  # BREAKPOINT S08
        h = x + self.attention(self.norm1(x))  # BREAKPOINT S16
        x = h + self.mlp(self.norm2(h))  # BREAKPOINT S19
        return x  # BREAKPOINT S20


with torch.no_grad():
    out = nn.Sequential(Block(), Block()).eval()(torch.randn(B, N, C))
'''

CORRECT_SUM = "x = h + self.mlp(self.norm2(h))"


def test_a_one_line_pre_norm_sum_with_its_mlp_inline_passes(tmp_path):
    code, checks = traced(tmp_path, INLINE_MLP_SUM)
    assert code == 0 and checks["S19"]["passed"] is True, checks["S19"]


@pytest.mark.parametrize("bug, named", [
    ("x = x + self.mlp(self.norm2(h))", "leaves out x (S15)"),  # the stream from the block input: attention lost
    ("x = h + 2 * self.mlp(self.norm2(h))", "was added twice"),
])
def test_a_one_line_sum_that_fits_a_bug_form_through_the_called_output_is_named_there(tmp_path, bug, named):
    code, checks = traced(tmp_path, INLINE_MLP_SUM.replace(CORRECT_SUM, bug))
    assert code == 1 and checks[""]["first_failure"].startswith("S19"), checks[""]
    assert checks["S19"]["passed"] is False and named in checks["S19"]["detail"], checks["S19"]
    assert checks["S19"]["evidence"]["kind"] == "bug form", checks["S19"]


def test_a_one_line_sum_changed_after_the_call_in_no_known_way_stays_not_checkable(tmp_path):
    # a tanh after the MLP: a form the check does not know is not called a bug
    code, checks = traced(tmp_path, INLINE_MLP_SUM.replace(CORRECT_SUM, "x = h + torch.tanh(self.mlp(self.norm2(h)))"))
    assert code == 0 and checks["S19"]["passed"] is None, checks["S19"]
