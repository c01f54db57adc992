"""Correct code in the forms round nine's fresh GPT-style implementations brought (tests/trace_fresh/ROUND9_GPT.md),
each built here on its own, none from the upstream code: a feed-forward run on the stream viewed as one row per token,
(B·T, C) — `fc1(h.view(-1, C))`, as zphang/minimal-opt's Megatron-style MLP and DeepSeek-V3's mixture-of-experts do —
batch-first and sequence-first (there the rows are positions-major, (T·B, C)), and queries and keys of a head size of
their own, other than C/h (DeepSeek-V3's multi-head latent attention: 12 features per query and key head, 8 per value
head). Each passes and says so; the bugs that look like them (the residual dropped around the MLP, fc1 fed the
un-normalised stream, 1/√d left out of the scores) are still named."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

MERGED_TOKENS_BLOCK = '''\
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, H, M = 2, 5, 16, 2, 32
SEQUENCE_FIRST = {sequence_first}


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc1, self.fc2 = nn.Linear(C, M), nn.Linear(M, C)

    def forward(self, x):  # BREAKPOINT G05
        h = self.ln_1(x)  # BREAKPOINT G06
        qkv = self.qkv(h).transpose(0, 1) if SEQUENCE_FIRST else self.qkv(h)
        q, k, v = qkv.split(C, dim=-1)
        q = q.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G08
        k = k.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G09
        v = v.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G10
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // H)  # BREAKPOINT G11
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))  # BREAKPOINT G12
        scores = scores.masked_fill(~mask, float("-inf"))  # BREAKPOINT G13
        probs = scores.softmax(-1)  # BREAKPOINT G14
        ctx = probs @ v
        ctx = ctx.permute(2, 0, 1, 3).reshape(T, B, C) if SEQUENCE_FIRST else ctx.transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(ctx)  # BREAKPOINT G18
        h = self.ln_2(x)  # BREAKPOINT G19
        shape = h.shape
        a = self.fc1({fc1_input}.reshape(-1, shape[-1]))  # BREAKPOINT G20
        a = F.relu(a)  # BREAKPOINT G21
        out = self.fc2(a)  # BREAKPOINT G22
        x = {residual}out.view(*shape)  # BREAKPOINT G23
        return x


with torch.no_grad():
    Block().eval()(torch.randn(T, B, C) if SEQUENCE_FIRST else torch.randn(B, T, C))
'''


def _block(sequence_first: bool, fc1_input: str = "h", residual: str = "x + ") -> str:
    return MERGED_TOKENS_BLOCK.format(sequence_first=sequence_first, fc1_input=fc1_input, residual=residual)


@pytest.mark.parametrize("sequence_first", [False, True], ids=["batch-first (B·T, C)", "sequence-first (T·B, C)"])
def test_a_feed_forward_on_the_tokens_merged_in_one_axis_is_read_per_position_and_passes(tmp_path, sequence_first):
    code, checks = traced(tmp_path, _block(sequence_first))
    assert code == 0, checks[""]["first_failure"]
    for label in ("G20", "G21", "G22", "G23"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])


@pytest.mark.parametrize("sequence_first", [False, True], ids=["batch-first", "sequence-first"])
@pytest.mark.parametrize(("fc1_input", "residual", "named", "form"), [
    ("h", "", "G23", "residual dropped"),
    ("x", "x + ", "G20", "computed from another tensor"),
], ids=["residual dropped around the MLP", "fc1 fed the un-normalised stream"])
def test_the_bugs_of_a_feed_forward_on_merged_tokens_are_named_first(tmp_path, sequence_first, fc1_input, residual,
                                                                      named, form):
    code, checks = traced(tmp_path, _block(sequence_first, fc1_input, residual))
    assert code == 1 and checks[""]["first_failure"].startswith(named), checks[""]["first_failure"]
    assert checks[named]["evidence"]["name"] == form


OWN_HEAD_SIZE_ATTENTION = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H, DV, DQK = 2, 5, 16, 2, 8, 12


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq, self.wk = nn.Linear(C, H * DQK, bias=False), nn.Linear(C, H * DQK, bias=False)
        self.wv, self.wo = nn.Linear(C, H * DV, bias=False), nn.Linear(H * DV, C, bias=False)

    def forward(self, x):
        q = self.wq(x).view(B, T, H, DQK){q_heads}  # BREAKPOINT G08
        k = self.wk(x).view(B, T, H, DQK){q_heads}  # BREAKPOINT G09
        v = self.wv(x).view(B, T, H, DV).transpose(1, 2)  # BREAKPOINT G10
        scores = q{to_heads} @ k{to_heads}.transpose(-2, -1) * {scale}  # BREAKPOINT G11
        mask = torch.full((T, T), float("-inf")).triu(1)  # BREAKPOINT G12
        scores = scores + mask  # BREAKPOINT G13
        probs = scores.softmax(-1)  # BREAKPOINT G14
        ctx = probs @ v  # BREAKPOINT G15
        return self.wo(ctx.transpose(1, 2).reshape(B, T, H * DV))  # BREAKPOINT G17


with torch.no_grad():
    x = torch.randn(B, T, C)  # BREAKPOINT G06
    Attention().eval()(x)
'''


def _attention(scale: str = "DQK ** -0.5", heads_after_positions: bool = False) -> str:
    return OWN_HEAD_SIZE_ATTENTION.format(scale=scale, q_heads="" if heads_after_positions else ".transpose(1, 2)",
                                          to_heads=".transpose(1, 2)" if heads_after_positions else "")


@pytest.mark.parametrize("heads_after_positions", [False, True], ids=["(B, h, T, 12)", "(B, T, h, 12)"])
def test_queries_and_keys_of_a_head_size_of_their_own_are_read_and_their_scores_checked(tmp_path,
                                                                                         heads_after_positions):
    code, checks = traced(tmp_path, _attention(heads_after_positions=heads_after_positions))
    assert code == 0, checks[""]["first_failure"]
    assert checks["G11"]["passed"] is True and "√12" in checks["G11"]["detail"], checks["G11"]["detail"]


def test_scores_of_queries_and_keys_of_their_own_head_size_split_after_the_positions_without_the_scale_are_named(
        tmp_path):
    code, checks = traced(tmp_path, _attention(scale="1.0", heads_after_positions=True))
    assert code == 1 and checks[""]["first_failure"].startswith("G11"), checks[""]["first_failure"]
    assert checks["G11"]["evidence"]["name"] == "1/√d missing"
