"""A pre-norm block whose MLP's LayerNorm is given the attention's normalised input, ``self.mlp(self.ln2(x_norm))``
with ``x_norm = self.ln1(x)`` (issue 40, round eight's ahanaf019 B4): the MLP's step passes as fc2 of what its own
Linear read, and the sum after it adds up. The LayerNorm the MLP's line called normalised a LayerNorm of the block's
input, not the stream its output is added to: that line's step fails with "LayerNorm of the wrong tensor". The
correct block, a parallel block (both sublayers normalise the block's input) and a LayerNorm of the raw block input
are not taken for it. A tiny own script, no upstream file."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

SCRIPT = """\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, C=16, H=2):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn = nn.MultiheadAttention(C, H, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

    def forward(self, x):  # BREAKPOINT S08
        x_norm = self.ln1(x)
        attn_out = self.attn(x_norm, x_norm, x_norm)[0]
        x = x + attn_out  # BREAKPOINT S16
        mlp_out = self.mlp(self.ln2(x))  # BREAKPOINT S18
        x = x + mlp_out  # BREAKPOINT S19
        return x


torch.manual_seed(0)
block = Block().eval()
with torch.no_grad():
    for norm in (block.ln1, block.ln2):  # a gain and a bias of their own: the LayerNorms told apart
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-0.5, 0.5)
    block(torch.randn(2, 9, 16))
"""
NORMALISED_TWICE = {"self.ln2(x))  # BREAKPOINT S18": "self.ln2(x_norm))  # BREAKPOINT S18"}
# correct forms, and a slip of another form (the raw block input normalised): none is this bug
NOT_THIS_BUG = {
    "pre-norm": {},
    "parallel": {"        x = x + attn_out  # BREAKPOINT S16\n": "",
                 "x = x + mlp_out  # BREAKPOINT S19": "x = x + attn_out + mlp_out  # BREAKPOINT S19"},
    "the block input normalised": {"x = x + attn_out  # BREAKPOINT S16": "s = x + attn_out  # BREAKPOINT S16",
                                   "x = x + mlp_out  # BREAKPOINT S19": "x = s + mlp_out  # BREAKPOINT S19"},
}


def _script(replaced: dict[str, str]) -> str:
    text = SCRIPT
    for old, new in replaced.items():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("form", NOT_THIS_BUG)
def test_a_mlp_layer_norm_that_reads_a_stream_is_not_the_wrong_tensor(tmp_path, form):
    code, checks = traced(tmp_path, _script(NOT_THIS_BUG[form]))
    evidence = [check.get("evidence", {}).get("name") for label, check in checks.items() if label]
    assert "LayerNorm of the wrong tensor" not in evidence, checks
    if form != "the block input normalised":
        assert code == 0, checks[""]
        assert checks["S18"]["passed"] is True, checks["S18"]


def test_a_mlp_layer_norm_of_the_attentions_normalised_input_is_the_wrong_tensor(tmp_path):
    code, checks = traced(tmp_path, _script(NORMALISED_TWICE))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("S18"), checks[""]
    assert checks["S18"]["evidence"]["name"] == "LayerNorm of the wrong tensor", checks["S18"]
    message = checks["S18"]["evidence"]["message"]
    assert "normalised a LayerNorm of x (S08), not x (S16), the stream its output is added to" in message, message
