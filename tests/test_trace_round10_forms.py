"""Correct code in the forms round ten's fresh GPT-style implementations brought (tests/trace_fresh/ROUND10_GPT.md),
each built here on its own, none from the upstream code: a GPT-NeoX parallel block whose attention and MLP read one
LayerNorm, marked as both G06 and G19 on its line, the residual, the attention and the MLP added in one sum (the form
of rato-tokyo/new-llm's Pythia). It passes, no red verdict on the LayerNorm; the bugs that look like it (the residual
dropped from the sum, the MLP fed the un-normalised block input) are still named first, at their own steps. And queries
and keys marked after their rotary positions (`q = rope(q)`: the Pythia's rotate-half on a quarter of each head, split
from GPT-NeoX's fused projection laid out per head, (B, T, h, [q k v]); the CS336 solution's interleaved pairs over
whole heads, projected on unmarked lines): they pass as the projection split into heads and rotated by a fitted member
of the rotary family, no longer unrecognised."""

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


ROTATED_ATTENTION = '''\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H = 2, 6, 32, 2
HS = C // H
ROT, INTERLEAVED, LAYOUT = {rot}, {interleaved}, "{layout}"


def rotate(x):
    theta = 10000.0 ** (-torch.arange(0, ROT, 2).float() / ROT)
    angles = torch.arange(T).float()[:, None] * theta[None, :]
    cos, sin = angles.cos(), angles.sin()
    part, rest = x[..., :ROT], x[..., ROT:]
    if INTERLEAVED:
        even, odd = part[..., 0::2], part[..., 1::2]
        part = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)
    else:
        first, second = part[..., :ROT // 2], part[..., ROT // 2:]
        part = torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)
    return torch.cat((part, rest), dim=-1)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(C)
        self.qkv, self.q, self.k, self.v = nn.Linear(C, 3 * C), nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.proj = nn.Linear(C, C)

    def forward(self, x):  # BREAKPOINT G05
        h = self.ln(x)  # BREAKPOINT G06
        if LAYOUT == "separate":
            q, k, v = (t.view(B, T, H, HS).transpose(1, 2) for t in (self.q(h), self.k(h), self.v(h)))
        else:
            qkv = self.qkv(h)  # BREAKPOINT G07
            if LAYOUT == "per head":
                q, k, v = qkv.view(B, T, H, 3 * HS).transpose(1, 2).chunk(3, dim=-1)
            else:
                q, k, v = (t.view(B, T, H, HS).transpose(1, 2) for t in qkv.split(C, dim=-1))
        q = rotate(q)  # BREAKPOINT G08
        k = rotate(k)  # BREAKPOINT G09
        scores = q @ k.transpose(-2, -1) / math.sqrt(HS)  # BREAKPOINT G11
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))  # BREAKPOINT G12
        scores = scores.masked_fill(~mask, float("-inf"))  # BREAKPOINT G13
        probs = scores.softmax(-1)  # BREAKPOINT G14
        ctx = (probs @ v).transpose(1, 2).reshape(B, T, C)  # BREAKPOINT G16
        return x + self.proj(ctx)  # BREAKPOINT G18


with torch.no_grad():
    Attention().eval()(torch.randn(B, T, C))
'''


@pytest.mark.parametrize(("layout", "rot", "interleaved"), [
    ("per head", 4, False),
    ("side by side", 16, True),
    ("separate", 16, True),
], ids=["GPT-NeoX: q, k, v side by side per head, a quarter of each head rotated (rotate-half)",
        "fused q, k, v blocks, whole heads rotated in interleaved pairs",
        "separate projections on unmarked lines, whole heads rotated in interleaved pairs (CS336)"])
def test_queries_and_keys_marked_after_their_rotary_positions_pass_as_the_projection_rotated(tmp_path, layout, rot,
                                                                                             interleaved):
    code, checks = traced(tmp_path, ROTATED_ATTENTION.format(layout=layout, rot=rot, interleaved=interleaved))
    assert code == 0, checks[""]["first_failure"]
    for label in ("G08", "G09"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
        assert "rotary positions on" in checks[label]["detail"], checks[label]["detail"]
