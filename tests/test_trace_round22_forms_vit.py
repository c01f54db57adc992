"""Round twenty-two's ViT-side forms (tests/trace_fresh/ROUND22_VIT.md, "What the checks missed"), each built in a
script of our own.

q, k and v read through a fused Linear chunked on the statement before the marked head split (nicolagheza's ``qkv =
self.qkv_proj(x)``, ``q, k, v = qkv.chunk(3, dim=-1)``, then ``q = q.reshape(...).transpose(1, 2)  # BREAKPOINT
S09``) had passed "as the line read them", the chunk compared with itself: they are recomputed from the fused Linear,
each its own part, so a K taken from the V chunk is "another part of the projection". A line of another form (the
queries scaled where taken, a split on another axis) reads as before (chunked_feeders.py).

The MLP's residual adding the normalised stream (Differential_ViT's B6: ``x = self.norm2(x)``, then ``x = x +
self.mlp(x)  # BREAKPOINT S19``) left S19 not checkable: the stream is the sum S08 + S15 on its check, and only a
single operand's LayerNorm was tried in its place. The LayerNorm of the whole stream is tried too."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

FUSED_CHUNKED = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)


class Attention(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads, self.hs = heads, d // heads
        self.qkv_proj = nn.Linear(d, 3 * d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x):
        B, N, _ = x.shape
        qkv = self.qkv_proj(x)
        SPLIT
        q = q.reshape(B, N, self.heads, self.hs).transpose(1, 2)  # BREAKPOINT S09
        k = k.reshape(B, N, self.heads, self.hs).transpose(1, 2)  # BREAKPOINT S10
        v = v.reshape(B, N, self.heads, self.hs).transpose(1, 2)  # BREAKPOINT S11
        scores = q @ k.transpose(-2, -1) / self.hs ** 0.5  # BREAKPOINT S12
        weights = torch.softmax(scores, dim=-1)  # BREAKPOINT S13
        return self.out_proj((weights @ v).transpose(1, 2).reshape(B, N, -1))  # BREAKPOINT S15


class Block(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(d), Attention(d)

    def forward(self, x):  # BREAKPOINT S08
        return x + self.attn(self.norm1(x))  # BREAKPOINT S16


with torch.no_grad():
    Block()(torch.randn(2, 5, 16))
'''


@pytest.mark.parametrize("split", ["q, k, v = qkv.chunk(3, dim=-1)", "q, k, v = torch.chunk(qkv, 3, -1)",
                                   "q, k, v = qkv.split(16, dim=-1)"])
def test_heads_split_from_a_fused_linear_chunked_on_the_statement_before_are_recomputed_from_it(tmp_path, split):
    code, checks = traced(tmp_path, FUSED_CHUNKED.replace("SPLIT", split))
    assert code == 0, checks[""]
    for label, letter in (("S09", "q"), ("S10", "k"), ("S11", "v")):
        assert checks[label]["passed"] is True, checks[label]["detail"]
        assert f"recomputed {letter} = LN(x)·W{letter}ᵀ + b" in checks[label]["detail"], checks[label]["detail"]
        assert "the Linear an unmarked statement before it called" in checks[label]["detail"], checks[label]["detail"]


def test_keys_taken_from_the_value_chunk_are_another_part_of_the_projection(tmp_path):
    code, checks = traced(tmp_path, FUSED_CHUNKED.replace("SPLIT", "q, v, k = qkv.chunk(3, dim=-1)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S10"), checks[""]
    assert checks["S09"]["passed"] is True, checks["S09"]["detail"]
    for label, own, taken in (("S10", "K", "V"), ("S11", "V", "K")):
        assert checks[label]["evidence"]["name"] == "another part of the projection", checks[label]
        assert f"is the {taken} part of the projection, where the {own} part belongs" in checks[label]["detail"]


def test_queries_scaled_where_taken_from_the_chunk_read_as_before(tmp_path):
    """Not the chunk-then-rearrange form: the line scales the part, and its queries are read as the line read them
    (round eleven's queries scaled where taken pass there; a trace-back misread them once, 73a1e59)."""
    source = FUSED_CHUNKED.replace("SPLIT", "q, k, v = qkv.chunk(3, dim=-1)").replace(
        "q = q.reshape(B, N, self.heads, self.hs).transpose(1, 2)",
        "q = q.reshape(B, N, self.heads, self.hs).transpose(1, 2) * self.hs ** -0.5").replace(
        "/ self.hs ** 0.5  # BREAKPOINT S12", " # BREAKPOINT S12")
    code, checks = traced(tmp_path, source)
    assert code == 0, checks[""]
    assert checks["S09"]["passed"] is True and "as the line read it" in checks["S09"]["detail"], checks["S09"]
    assert "the Linear an unmarked statement before it called" in checks["S10"]["detail"], checks["S10"]


MLP_RESIDUAL = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.out_proj = nn.Linear(d, d)

    def forward(self, x):
        return self.out_proj(x)  # BREAKPOINT S15


class Block(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.norm1, self.norm2, self.attn = nn.LayerNorm(d), nn.LayerNorm(d), Attention(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * d, d), nn.Dropout(0.1))

    def forward(self, x):  # BREAKPOINT S08
        x_residual = x
        x = self.norm1(x)
        x = x_residual + self.attn(x)  # BREAKPOINT S16
        x_residual = x
        x = self.norm2(x)
        x = STREAM + self.mlp(x)  # BREAKPOINT S19
        return x


with torch.no_grad():
    Block().eval()(torch.randn(2, 5, 16))
'''


def test_the_mlp_residual_adding_the_stream_passes(tmp_path):
    code, checks = traced(tmp_path, MLP_RESIDUAL.replace("STREAM", "x_residual"))
    assert code == 0 and checks["S19"]["passed"] is True, checks["S19"]["detail"]


def test_the_mlp_residual_adding_the_normalised_stream_is_named_at_its_sum(tmp_path):
    code, checks = traced(tmp_path, MLP_RESIDUAL.replace("STREAM", "x"))
    assert code == 1 and checks[""]["first_failure"].startswith("S19"), checks[""]
    assert checks["S16"]["passed"] is True, checks["S16"]["detail"]
    assert checks["S19"]["evidence"]["name"] == "the residual adds the normalised stream", checks["S19"]
    assert "adds a LayerNorm of x (S16) where x (S16) itself belongs" in checks["S19"]["detail"], checks["S19"]


def test_a_block_whose_stream_is_its_layernorm_is_not_red_at_the_mlp_residual(tmp_path):
    # round fourteen's CCT: `src = self.norm1(src)  # S16` makes the normalised tensor the stream the MLP's residual
    # adds; no step holds the attention's sum unnormalised, so its LayerNorm added back is no evidence of a bug
    cct = MLP_RESIDUAL.replace('''        x_residual = x
        x = self.norm1(x)
        x = x_residual + self.attn(x)  # BREAKPOINT S16
        x_residual = x
        x = self.norm2(x)
        x = STREAM + self.mlp(x)  # BREAKPOINT S19''', '''        x = x + self.attn(self.norm2(x))
        x = self.norm1(x)  # BREAKPOINT S16
        x = x + self.mlp(x)  # BREAKPOINT S19''')
    code, checks = traced(tmp_path, cct)
    assert code == 0, {label: check["detail"] for label, check in checks.items() if label}
    assert checks["S19"]["passed"] is not False, checks["S19"]["detail"]
