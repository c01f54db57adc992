"""Round seven's leftovers (tests/trace_fresh/ROUND7_GPT.md and ROUND7_VIT.md, "Round 7 leftovers"): a sublayer given
the residual stream itself where its pre-norm block gives it a LayerNorm of the stream
(trace/reading/sublayer_input.py), held by tiny scripts of our own (no upstream file), each in the form a fresh
implementation wrote it:

- farhad-dalirani B4: ``x = x + self.mha(x)``, the attention's LayerNorm left out (a fused qkv Linear inside the
  module);
- arda92a B4: an MLP module that normalises its input and then calls its Linears with the input itself;
- affjljoo3581 B1: K projected from the block input, in another function than the head split (``self.attn(a, x, a)``).

Each is named first, at the step it reaches, with the bug form and the numbers; the correct scripts, and a post-norm
block whose sublayers read the stream itself (no LayerNorm of a stream anywhere), pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import trace_source as traced
from tests.fresh_rounds import msa_module
from transformer_trace.trace.reading.sublayer_input import STREAM_NOT_NORMALISED

FUSED_QKV_VIT = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 17, 16, 4


class MHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        qkv = self.qkv(x).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # BREAKPOINT S09, S10, S11
        a = (q @ k.transpose(-2, -1)) * (C // H) ** -0.5  # BREAKPOINT S12
        a = a.softmax(-1)  # BREAKPOINT S13
        out = a @ v  # BREAKPOINT S14
        out = out.transpose(1, 2).reshape(B, N, C)
        out = self.proj(out)  # BREAKPOINT S15
        return out


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.mha, self.mlp = MHA(), MLP()

    def forward(self, x):  # BREAKPOINT S08
        x = x + self.mha(self.norm1(x))  # BREAKPOINT S16
        x = x + self.mlp(self.norm2(x))  # BREAKPOINT S19
        return x  # BREAKPOINT S20


with torch.no_grad():
    blocks = nn.Sequential(Block(), Block()).eval()
    for b in blocks:
        for n in (b.norm1, b.norm2):
            nn.init.normal_(n.weight, 1.0, 0.2); nn.init.normal_(n.bias, 0.0, 0.2)
    out = blocks(torch.randn(B, N, C) * 2 + 0.5)
'''

LAYER_NORM_INSIDE_THE_MLP = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C = 2, 17, 16


''' + msa_module("layer_norm_x, layer_norm_x, layer_norm_x, need_weights=False") + '''

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_norm = nn.LayerNorm(C)
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

    def forward(self, x):
        layer_norm_x = self.layer_norm(x)
        mlp_output = self.mlp(layer_norm_x)  # BREAKPOINT S18
        return mlp_output


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.msa_block, self.mlp_block = MSA(), MLP()

    def forward(self, x):  # BREAKPOINT S08
        x = self.msa_block(x) + x  # BREAKPOINT S16
        x = self.mlp_block(x) + x  # BREAKPOINT S19
        return x  # BREAKPOINT S20


with torch.no_grad():
    blocks = nn.Sequential(Block(), Block()).eval()
    for module in blocks.modules():
        if isinstance(module, nn.LayerNorm):
            nn.init.normal_(module.weight, 1.0, 0.2); nn.init.normal_(module.bias, 0.0, 0.2)
    out = blocks(torch.randn(B, N, C) * 2 + 0.5)
'''

PROJECTED_IN_ANOTHER_FUNCTION = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H = 2, 8, 32, 4


class Heads(nn.Module):
    def forward(self, q, k, v):
        q = q.view(B, T, H, C // H)
        k = k.view(B, T, H, C // H)
        v = v.view(B, T, H, C // H)
        q = q.transpose(1, 2)  # BREAKPOINT G08
        k = k.transpose(1, 2)  # BREAKPOINT G09
        v = v.transpose(1, 2)  # BREAKPOINT G10
        scores = q @ k.transpose(-2, -1) / (C // H) ** 0.5  # BREAKPOINT G11
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))  # BREAKPOINT G13
        probs = scores.softmax(-1)  # BREAKPOINT G14
        return (probs @ v).transpose(1, 2).reshape(B, T, C)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = Heads()
        self.proj_q, self.proj_k, self.proj_v = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.linear = nn.Linear(C, C)

    def forward(self, q, k, v):
        q, k, v = self.proj_q(q), self.proj_k(k), self.proj_v(v)
        x = self.linear(self.heads(q, k, v))  # BREAKPOINT G17
        return x


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_attn, self.ln_ff = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn = Attention()
        self.ff = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

    def forward(self, x):  # BREAKPOINT G05 x
        a = self.ln_attn(x)  # BREAKPOINT G06
        a = self.attn(a, a, a)
        x = x + a  # BREAKPOINT G18
        x = x + self.ff(self.ln_ff(x))  # BREAKPOINT G23, G24
        return x


with torch.no_grad():
    blocks = nn.Sequential(Block(), Block()).eval()
    for module in blocks.modules():
        if isinstance(module, nn.LayerNorm):
            nn.init.normal_(module.weight, 1.0, 0.2); nn.init.normal_(module.bias, 0.0, 0.2)
    out = blocks(torch.randn(B, T, C) * 2 + 0.5)
'''

POST_NORM_VIT = FUSED_QKV_VIT.replace("x = x + self.mha(self.norm1(x))", "x = self.norm1(x + self.mha(x))").replace(
    "x = x + self.mlp(self.norm2(x))", "x = self.norm2(x + self.mlp(x))")

CORRECT = {"fused qkv inside the attention module": FUSED_QKV_VIT, "the LayerNorm inside the MLP module":
           LAYER_NORM_INSIDE_THE_MLP, "projections in another function than the head split":
           PROJECTED_IN_ANOTHER_FUNCTION, "post-norm: each sublayer reads the stream": POST_NORM_VIT}
# (script, its line as written, the bug, the step named first, the stream the message names)
BUGS = {
    "the attention's LayerNorm left out": (FUSED_QKV_VIT, "self.mha(self.norm1(x))", "self.mha(x)", "S09", "x (S08)"),
    "the MLP given its module's input, not the LayerNorm it took": (
        LAYER_NORM_INSIDE_THE_MLP, "mlp_output = self.mlp(layer_norm_x)", "mlp_output = self.mlp(x)", "S18", "x (S16)"),
    "K projected from the block input": (PROJECTED_IN_ANOTHER_FUNCTION, "self.attn(a, a, a)", "self.attn(a, x, a)",
                                         "G09", "x (G05)"),
}


@pytest.mark.parametrize("source", CORRECT.values(), ids=CORRECT.keys())
def test_a_sublayer_given_what_its_block_form_gives_it_passes(tmp_path: Path, source: str):
    code, checks = traced(tmp_path, source)
    assert code == 0, checks[""]
    assert not any((check.get("evidence") or {}).get("name") == STREAM_NOT_NORMALISED for check in checks.values())


@pytest.mark.parametrize("source, old, new, step, stream", BUGS.values(), ids=BUGS.keys())
def test_a_sublayer_given_the_stream_where_its_layer_norm_belongs_is_named_first(
        tmp_path: Path, source: str, old: str, new: str, step: str, stream: str):
    code, checks = traced(tmp_path, source.replace(old, new))
    assert code == 1 and checks[""]["first_failure"].startswith(step), checks[""]
    evidence = checks[step]["evidence"]
    assert evidence["name"] == STREAM_NOT_NORMALISED, checks[step]
    # the student's names and the numbers: the stream given, and how far it is from any LayerNorm of it
    assert f"was given {stream} itself" in evidence["message"], evidence
    assert "standard deviation" in evidence["message"] and "largest difference" in evidence["message"], evidence
