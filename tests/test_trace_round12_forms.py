"""Correct code in the form round twelve's fresh GPT-style notebook brought (tests/trace_fresh/ROUND12_GPT.md), built
here in a script of our own, none from the upstream code: post-norm blocks whose residual sums are marked on the
line that normalises them (``x = self.ln1(x + self.attn(x))``, the GPT's G18 and G23), so the step captured is the
LayerNorm of the sum. It passes as that post-norm form; the residual dropped on that line (``self.ln1(self.attn(x))``)
is still named, and a pre-norm sum still passes as the plain sum. And the bug form a fresh GPT's planted bug showed
missing: learned position IDs that start past 0 (``arange(1, T + 1)``), named "positions shifted" at G03."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

POST_NORM_GPT = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H = 2, 8, 32, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        q, k, v = [t.view(B, T, H, C // H).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1)]
        scores = q @ k.transpose(-2, -1) / (C // H) ** 0.5
        scores = scores.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
        out = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(out)  # BREAKPOINT G17


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.ReLU(), nn.Linear(4 * C, C))
        self.ln1 = nn.LayerNorm(C)
        self.ln2 = nn.LayerNorm(C)

    def mlp_out(self, x):
        return self.mlp(x)  # BREAKPOINT G22

    def forward(self, x):  # BREAKPOINT G05 x
        x = FIRST_SUM  # BREAKPOINT G18
        x = SECOND_SUM  # BREAKPOINT G23
        return x


block = Block().eval()
with torch.no_grad():
    for norm in (block.ln1, block.ln2):
        norm.weight.copy_(1.0 + 0.1 * torch.randn(C))
        norm.bias.copy_(0.1 * torch.randn(C))
    out = block(torch.randn(B, T, C))
'''

POST_NORM = {"FIRST_SUM": "self.ln1(x + self.attn(x))", "SECOND_SUM": "self.ln2(x + self.mlp_out(x))"}


def _script(**sums: str) -> str:
    source = POST_NORM_GPT
    for name, expression in {**POST_NORM, **sums}.items():
        source = source.replace(name, expression)
    return source


def test_a_post_norm_sum_marked_on_its_layernorm_line_passes_as_the_layernorm_of_the_sum(tmp_path):
    code, checks = traced(tmp_path, _script())
    assert code == 0, checks[""]
    for label in ("G18", "G23"):
        assert checks[label]["passed"] is True, checks[label]["detail"]
        assert "post-norm" in checks[label]["name"]


def test_the_residual_dropped_on_a_post_norm_line_is_still_named(tmp_path):
    code, checks = traced(tmp_path, _script(FIRST_SUM="self.ln1(self.attn(x))"))
    assert code == 1
    assert checks["G18"]["passed"] is False, checks["G18"]["detail"]
    assert checks["G18"]["evidence"]["name"] == "residual dropped"
    assert "leaves out x (G05)" in checks["G18"]["detail"]


@pytest.mark.parametrize("first, second", [("x + self.attn(self.ln1(x))", "x + self.mlp_out(self.ln2(x))")])
def test_a_pre_norm_sum_still_passes_as_the_plain_sum(tmp_path, first, second):
    code, checks = traced(tmp_path, _script(FIRST_SUM=first, SECOND_SUM=second))
    assert code == 0, checks[""]
    assert checks["G18"]["passed"] is True and checks["G18"]["name"] == "the operands add up to the residual sum"


LEARNED_POSITIONS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
T, C = 6, 16
token_table, position_table = nn.Embedding(20, C), nn.Embedding(12, C)
ids = torch.tensor([[1, 5, 7, 2, 9, 3], [4, 4, 8, 0, 6, 1]])  # BREAKPOINT G01
with torch.no_grad():
    tok = token_table(ids)  # BREAKPOINT G02
    pos = position_table(torch.arange(START, START + T))  # BREAKPOINT G03
    x = tok + pos  # BREAKPOINT G04
'''


@pytest.mark.parametrize("start", [1, 3])
def test_position_ids_that_start_past_zero_are_named_positions_shifted(tmp_path, start):
    """rishikesh2715/mini-GPT2's B5 (round twelve): `arange(1, T + 1)` for the position IDs."""
    code, checks = traced(tmp_path, LEARNED_POSITIONS.replace("START", str(start)))
    assert code == 1
    assert checks["G03"]["passed"] is False, checks["G03"]["detail"]
    assert checks["G03"]["evidence"]["name"] == "positions shifted"
    assert f"rows {start}…{start + 5}" in checks["G03"]["detail"]


def test_position_ids_from_zero_still_pass(tmp_path):
    code, checks = traced(tmp_path, LEARNED_POSITIONS.replace("START", "0"))
    assert code == 0, checks[""]
    assert checks["G03"]["passed"] is True, checks["G03"]["detail"]
