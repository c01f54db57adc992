"""Correct code in the forms round ten's fresh GPT-style implementations brought (tests/trace_fresh/ROUND10_GPT.md),
each built here on its own, none from the upstream code: a GPT-NeoX parallel block whose attention and MLP read one
LayerNorm, marked as both G06 and G19 on its line, the residual, the attention and the MLP added in one sum (the form
of rato-tokyo/new-llm's Pythia). It passes, no red verdict on the LayerNorm; the bugs that look like it (the residual
dropped from the sum, the MLP fed the un-normalised block input) are still named first, at their own steps."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

PARALLEL_BLOCK = '''\
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, H, M = 2, 6, 16, 2, 32


class ParallelBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc1, self.fc2 = nn.Linear(C, M), nn.Linear(M, C)

    def attention(self, h):
        q, k, v = self.qkv(h).split(C, dim=-1)
        q = q.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G08
        k = k.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G09
        v = v.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G10
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // H)  # BREAKPOINT G11
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))  # BREAKPOINT G12
        scores = scores.masked_fill(~mask, float("-inf"))  # BREAKPOINT G13
        probs = scores.softmax(-1)  # BREAKPOINT G14
        ctx = (probs @ v).transpose(1, 2).reshape(B, T, C)  # BREAKPOINT G16
        return self.proj(ctx)  # BREAKPOINT G17

    def forward(self, x):  # BREAKPOINT G05
        h = self.ln(x)  # BREAKPOINT G06, G19
        attn = self.attention(h)
        a = self.fc1({mlp_input})  # BREAKPOINT G20
        a = F.gelu(a)  # BREAKPOINT G21
        mlp = self.fc2(a)  # BREAKPOINT G22
        x = {residual}attn + mlp  # BREAKPOINT G23
        return x  # BREAKPOINT G24


with torch.no_grad():
    block = ParallelBlock().eval()
    block.ln.weight.add_(0.1 * torch.randn(C))
    block.ln.bias.add_(0.1 * torch.randn(C))
    block(torch.randn(B, T, C))
'''


def _block(mlp_input: str = "h", residual: str = "x + ") -> str:
    return PARALLEL_BLOCK.format(mlp_input=mlp_input, residual=residual)


def test_a_parallel_block_with_one_layernorm_marked_g06_and_g19_passes(tmp_path):
    code, checks = traced(tmp_path, _block())
    assert code == 0, checks[""]["first_failure"]
    assert checks["G19"]["passed"] is True, checks["G19"]["detail"]
    assert "parallel-residual block" in checks["G19"]["detail"] + checks["G19"]["name"]
    for label in ("G20", "G21", "G22", "G23"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])


@pytest.mark.parametrize(("mlp_input", "residual", "named"), [
    ("h", "", "G23"),
    ("x", "x + ", "G20"),
], ids=["residual dropped from the parallel sum", "the MLP fed the un-normalised block input"])
def test_the_bugs_of_a_parallel_block_are_named_first_at_their_own_step(tmp_path, mlp_input, residual, named):
    code, checks = traced(tmp_path, _block(mlp_input, residual))
    assert code == 1
    assert checks[""]["first_failure"].split(" ")[0] == named, checks[""]["first_failure"]
    assert checks[named]["evidence"] is not None, checks[named]["detail"]
