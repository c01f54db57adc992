"""Forms that round four's fresh GPT-style code (tests/trace_fresh/ROUND4_GPT.md) wrote, traced end to end on a tiny
script of our own in pguso/gpt-from-scratch's style: residuals in five statements (``residual = x`` … ``x = x +
residual``), the scores left unscaled and the 1/√hs applied inside the softmax after the mask. Correct code passes;
a block input of length 0 (the saved residual zeroed) is reported, never an internal error."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

FIVE_STATEMENT_GPT = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H = 2, 6, 16, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_query, self.W_key, self.W_value = (nn.Linear(C, C, bias=False) for _ in range(3))
        self.out_proj = nn.Linear(C, C)
        self.register_buffer("mask", torch.triu(torch.ones(T, T), diagonal=1).bool())

    def forward(self, x):
        q = self.W_query(x).view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G08
        k = self.W_key(x).view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G09
        v = self.W_value(x).view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G10
        scores = q @ k.transpose(-2, -1)  # BREAKPOINT G11
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))  # BREAKPOINT G13
        weights = torch.softmax(scores / (C // H) ** 0.5, dim=-1)  # BREAKPOINT G14
        out = (weights @ v).transpose(1, 2).contiguous().view(B, T, C)  # BREAKPOINT G16
        return self.out_proj(out)  # BREAKPOINT G17


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention, self.norm1 = Attention(), nn.LayerNorm(C)

    def forward(self, x):
        residual = x  # BREAKPOINT G05
        x = self.norm1(x)  # BREAKPOINT G06
        x = self.attention(x)
        x = x + residual  # BREAKPOINT G18
        return x


with torch.no_grad():
    Block().eval()(torch.randn(B, T, C))
'''


def test_unscaled_scores_with_the_scale_inside_the_softmax_and_five_statement_residuals_pass(tmp_path):
    code, checks = traced(tmp_path, FIVE_STATEMENT_GPT)
    assert code == 0, checks[""]
    assert "applied at the softmax" in checks["G11"]["name"], checks["G11"]
    assert checks[""]["counts"]["failed"] == 0


@pytest.mark.parametrize("old, new", [("residual = x  #", "residual = 0 * x  #")])
def test_a_block_input_of_length_zero_is_reported_not_an_internal_error(tmp_path, old, new):
    code, checks = traced(tmp_path, FIVE_STATEMENT_GPT.replace(old, new))
    assert code in (0, 1), checks[""]
    assert (tmp_path / "out" / "t").is_dir() and "G17" in checks
