"""A cross-attention whose keys and values come from the decoder instead of the encoder output (a fused key-value
projection or projections inside a helper call: K and V are never captured, so no check of the steps' own sees it):
where the module running a shared attention line was called with its key input equal to its query input, and its
name says cross-attention, or it is a decoder layer's second attention module, its hits are the cross-attention's and
its first captured step fails with the bug form "K or V from another input", with the key count where the source and
target lengths differ. Correct code, cross-attention by name or by place, gives no red. A tiny own script, no upstream
file (issue 40: ajhalthor's `encoder_decoder_attention(y, y, ...)`, d2l's `attention2(Y, Y, Y, ...)`)."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced
from transformer_trace.trace.reading.shared_lines import CROSS, hit_use

SCRIPT = """\
import math

import torch
import torch.nn as nn


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # Snapshot #10 or #24 or #33
    return torch.softmax(scores, dim=-1) @ v


class MultiHeadAttention(nn.Module):
    def __init__(self, C, h):
        super().__init__()
        self.h = h
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(C, C) for _ in range(4))

    def forward(self, x, memory):
        B, T, C = x.shape
        S = memory.shape[1]
        q = self.w_q(x).view(B, T, self.h, -1).transpose(1, 2)
        k = self.w_k(memory).view(B, S, self.h, -1).transpose(1, 2)
        v = self.w_v(memory).view(B, S, self.h, -1).transpose(1, 2)
        return self.w_o(attention(q, k, v).transpose(1, 2).reshape(B, T, C))


class EncoderLayer(nn.Module):
    def __init__(self, C, h):
        super().__init__()
        self.self_attn, self.norm = MultiHeadAttention(C, h), nn.LayerNorm(C)

    def forward(self, x):
        return self.norm(x + self.self_attn(x, x))


class DecoderLayer(nn.Module):
    def __init__(self, C, h):
        super().__init__()
        self.self_attn, self.cross_attn = MultiHeadAttention(C, h), MultiHeadAttention(C, h)

    def forward(self, y, memory):
        y = y + self.self_attn(y, y)
        return y + self.cross_attn(y, memory)


class Model(nn.Module):
    def __init__(self, C=16, h=2):
        super().__init__()
        self.encoder, self.decoder = EncoderLayer(C, h), DecoderLayer(C, h)

    def forward(self, src, tgt):
        return self.decoder(tgt, self.encoder(src))


torch.manual_seed(0)
with torch.no_grad():
    Model()(torch.randn(2, 6, 16), torch.randn(2, 5, 16))
"""
BY_PLACE = {"self.self_attn, self.cross_attn = ": "self.attention1, self.attention2 = ",
            "y + self.self_attn(y, y)": "y + self.attention1(y, y)",
            "self.cross_attn(y, memory)": "self.attention2(y, memory)"}
FED_BY_NAME = {"self.cross_attn(y, memory)": "self.cross_attn(y, y)"}
FED_BY_PLACE = {**BY_PLACE, "self.cross_attn(y, memory)": "self.attention2(y, y)"}


def written(replacements: dict[str, str]) -> str:
    source = SCRIPT
    for old, new in replacements.items():
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


@pytest.mark.parametrize("names", [{}, BY_PLACE], ids=["cross-attention by name", "by place (attention1, attention2)"])
def test_a_cross_attention_fed_the_encoder_output_gives_no_red(tmp_path, names):
    code, checks = traced(tmp_path, written(names))
    assert code == 0, checks[""]
    assert checks[""]["counts"]["failed"] == 0 and "#33" in checks, checks


@pytest.mark.parametrize("fed, says", [
    (FED_BY_NAME, "decoder.cross_attn (MultiHeadAttention), the cross-attention by its name, was called with its key "
                  "input equal to its query input"),
    (FED_BY_PLACE, "decoder.attention2 (MultiHeadAttention), the second attention module of its decoder layer"),
], ids=["cross-attention by name", "by place (attention1, attention2)"])
def test_a_cross_attention_fed_the_decoder_stream_is_named_at_its_first_step(tmp_path, fed, says):
    code, checks = traced(tmp_path, written(fed))
    assert code == 1 and checks[""]["first_failure"].startswith("#33"), checks[""]
    evidence = checks["#33"]["evidence"]
    assert evidence["name"] == "K or V from another input" and says in evidence["message"], evidence
    assert "(scores: 5 keys, the decoder's length T, where the encoder output's S = 6 belong)" in evidence["message"]


def path(side: str, attribute: str, inputs: str) -> list:
    return [["", "Model", None], [side, f"{side.title()}Layer", None], [attribute, "MultiHeadAttention", inputs]]


def test_a_module_named_cross_attention_called_with_its_queries_as_keys_is_the_cross_attention_misfed():
    told = hit_use(path("decoder", "cross_attn", "same"), 2)
    assert told.use == CROSS and "called with its key input equal to its query input" in told.misfed


@pytest.mark.parametrize("side, attribute, inputs", [
    ("encoder", "src_attn", "same"),  # the encoder has no cross-attention: a name and the inputs at odds, not told
    ("decoder", "cross_attn", "differ"),  # the cross-attention as it should be: told, nothing misfed
])
def test_only_a_decoders_cross_attention_fed_its_queries_is_misfed(side, attribute, inputs):
    told = hit_use(path(side, attribute, inputs), 2)
    assert not told.misfed and told.use == (CROSS if inputs == "differ" else None)
