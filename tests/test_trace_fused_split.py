"""q, k and v split from a marked fused projection on an unmarked line (litgpt's ``q, k, v = qkv.split(...)``, then
``view`` and ``transpose`` marked G08–G10; issue 40: a planted bug is named at its own step): each head step is read
against its part of the fused G07, whatever layout the line read it in, so q and k swapped in the split are named
"another part of the projection" there."""

from __future__ import annotations

from tests.conftest import trace_source as traced

FUSED_SPLIT_UNMARKED = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H = 2, 6, 16, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)

    def forward(self, x):
        qkv = self.qkv(x)  # BREAKPOINT G07
        q, k, v = qkv.split((C, C, C), dim=-1)
        q = q.view(B, T, H, C // H)
        k = k.view(B, T, H, C // H)
        v = v.view(B, T, H, C // H)
        q = q.transpose(1, 2)  # BREAKPOINT G08
        k = k.transpose(1, 2)  # BREAKPOINT G09
        v = v.transpose(1, 2)  # BREAKPOINT G10
        return q, k, v


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_1, self.attn = nn.LayerNorm(C), Attention()

    def forward(self, x):  # BREAKPOINT G05 x
        x_normed = self.norm_1(x)  # BREAKPOINT G06
        return self.attn(x_normed)


with torch.no_grad():
    Block().eval()(torch.randn(B, T, C))
'''


def test_heads_split_on_unmarked_lines_are_read_as_the_parts_of_the_marked_fused_projection(tmp_path):
    code, checks = traced(tmp_path, FUSED_SPLIT_UNMARKED)
    assert code == 0, checks[""]
    for label, letter in (("G08", "Q"), ("G09", "K"), ("G10", "V")):
        assert checks[label]["passed"] is True, checks[label]
        assert f"the {letter} part of the fused projection" in checks[label]["name"], checks[label]


def test_q_and_k_swapped_in_an_unmarked_split_are_named_at_their_own_steps(tmp_path):
    code, checks = traced(tmp_path, FUSED_SPLIT_UNMARKED.replace("q, k, v = qkv.split", "k, q, v = qkv.split"))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("G08"), checks[""]
    assert checks["G08"]["evidence"]["name"] == "another part of the projection", checks["G08"]
    assert "is the K part of the projection" in checks["G08"]["evidence"]["message"], checks["G08"]
    assert checks["G09"]["evidence"]["name"] == "another part of the projection", checks["G09"]
