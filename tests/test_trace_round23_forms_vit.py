"""Round twenty-three's ViT-side forms (tests/trace_fresh/ROUND23_VIT.md, "What the checks missed"), each built in a
script of our own.

q, k and v read through a fused Linear chunked on an earlier statement, with rearranging statements between the chunk
and the marked line (Andreathegm's ``q, k, v = qkv.chunk(3, dim=-1)``, ``q = q.view(B, N, h, hs)``, then ``q =
q.transpose(1, 2)  # BREAKPOINT S09``), had passed "as the line read them": the chain was followed one statement only,
so the fused Linear's input (the stream, where norm1 of it belongs: Andreathegm's B4) was never read. The chain is
followed through any number of rearranging statements (chunked_feeders.py), the part read viewed or transposed
(feeders.py ``holds_a_part``)."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

CHUNKED_THEN_VIEWED = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)


class Attention(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads, self.hs = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x):
        B, N, _ = x.shape
        qkv = self.qkv(x)
        q, k, v = qkv.chunk(3, dim=-1)
        REARRANGED
        scores = q @ k.transpose(-2, -1) / self.hs ** 0.5  # BREAKPOINT S12
        weights = torch.softmax(scores, dim=-1)  # BREAKPOINT S13
        return self.out_proj((weights @ v).transpose(1, 2).reshape(B, N, -1))  # BREAKPOINT S15


class Block(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(d), Attention(d)
        self.norm2, self.fc1, self.fc2 = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):  # BREAKPOINT S08
        x = x + self.attn(ATTENDED)  # BREAKPOINT S16
        h = torch.nn.functional.gelu(self.fc1(self.norm2(x)))  # BREAKPOINT S17
        return x + self.fc2(h)  # BREAKPOINT S19


with torch.no_grad():
    Block()(torch.randn(2, 5, 16))
'''

VIEWED_THEN_MARKED = '''q = q.view(B, N, self.heads, self.hs)
        k = k.view(B, N, self.heads, self.hs)
        v = v.view(B, N, self.heads, self.hs)
        q = q.transpose(1, 2)  # BREAKPOINT S09
        k = k.transpose(1, 2)  # BREAKPOINT S10
        v = v.transpose(1, 2)  # BREAKPOINT S11'''
TRANSPOSED_THEN_MARKED = '''q = q.view(B, N, self.heads, self.hs).transpose(1, 2)
        k = k.reshape(B, N, self.heads, self.hs)
        k = k.permute(0, 2, 1, 3)
        v = v.view(B, N, self.heads, self.hs)
        q = q.contiguous()  # BREAKPOINT S09
        k = k.contiguous()  # BREAKPOINT S10
        v = v.transpose(1, 2)  # BREAKPOINT S11'''


def _chunked(rearranged: str, attended: str) -> str:
    return CHUNKED_THEN_VIEWED.replace("REARRANGED", rearranged).replace("ATTENDED", attended)


@pytest.mark.parametrize("rearranged", [VIEWED_THEN_MARKED, TRANSPOSED_THEN_MARKED])
def test_heads_read_through_rearranging_statements_after_the_chunk_are_recomputed_from_the_fused_linear(
        tmp_path, rearranged):
    code, checks = traced(tmp_path, _chunked(rearranged, "self.norm1(x)"))
    assert code == 0, checks[""]
    for label, letter in (("S09", "q"), ("S10", "k"), ("S11", "v")):
        assert checks[label]["passed"] is True, checks[label]["detail"]
        assert f"recomputed {letter} = LN(x)·W{letter}ᵀ + b" in checks[label]["detail"], checks[label]["detail"]
        assert "the Linear an unmarked statement before it called" in checks[label]["detail"], checks[label]["detail"]


@pytest.mark.parametrize("rearranged", [VIEWED_THEN_MARKED, TRANSPOSED_THEN_MARKED])
def test_the_attention_given_the_stream_is_named_at_the_queries(tmp_path, rearranged):
    """Andreathegm's B4: ``self.attn(x)`` where ``self.attn(self.norm1(x))`` belongs, the chunk two statements or
    more above the marked line."""
    code, checks = traced(tmp_path, _chunked(rearranged, "x"))
    assert code == 1 and checks[""]["first_failure"].startswith("S09"), checks[""]
    assert checks["S09"]["evidence"]["name"] == "sublayer given the stream, not its LayerNorm", checks["S09"]


def test_keys_from_the_value_chunk_viewed_before_the_line_are_another_part(tmp_path):
    source = _chunked(VIEWED_THEN_MARKED, "self.norm1(x)").replace("q, k, v = qkv.chunk", "q, v, k = qkv.chunk")
    code, checks = traced(tmp_path, source)
    assert code == 1 and checks[""]["first_failure"].startswith("S10"), checks[""]
    assert checks["S10"]["evidence"]["name"] == "another part of the projection", checks["S10"]


def test_a_scale_between_the_chunk_and_the_line_is_not_followed(tmp_path):
    """Not a rearrangement: the queries scaled on a statement between read as the line read them (as round
    twenty-two's scaled queries). (S12 of this script, the scale left out of the product, is red as it was before this
    round: queries scaled on an unmarked statement are not read there; not this form's matter.)"""
    source = _chunked(VIEWED_THEN_MARKED, "self.norm1(x)").replace(
        "q = q.view(B, N, self.heads, self.hs)\n", "q = q.view(B, N, self.heads, self.hs) * self.hs ** -0.5\n").replace(
        "/ self.hs ** 0.5  # BREAKPOINT S12", " # BREAKPOINT S12")
    _, checks = traced(tmp_path, source)
    assert checks["S09"]["passed"] is True and "as the line read it" in checks["S09"]["detail"], checks["S09"]
