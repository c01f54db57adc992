"""Correct code in three forms an encoder–decoder brought (round nine, tests/trace_fresh/ROUND9_GPT.md: Taeksu-Kim's
ALiBi/GQA transformer), each built here in a tiny script of our own, none from the upstream code:

- grouped-query and multi-query attention: K and V h_kv·hs wide, h_kv dividing the h query heads, their heads marked
  before or after the repeat to h heads (``repeat_interleave``, ``expand`` + ``reshape``, or tiled with ``repeat``:
  which query heads share a key/value head is fitted, checks/grouped.py);
- ALiBi's key-only causal bias, (j − T + 1)·slope, constant down each column: under the softmax it equals
  −(i − j)·slope, a function of key − query up to a constant per query row (checks/position_bias.py);
- a SwiGLU feed-forward in the encoder–decoder catalogue: the gate marked after its SiLU, the second Linear given the
  gate times the up projection (checks/gated.py).

Each passes and says so; a bug in each form is named first with its bug form."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.checks.grouped import INTERLEAVED, ORDER_WORDS, TILED, fitted_heads, kv_heads
from transformer_trace.checks.position_bias import relative_bias

SCRIPT = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, S, T, C, H, KV, M = 2, 6, 5, 16, 4, {kv}, 32
HS = C // H


def tiled(x, n):
    return x.repeat(1, n, 1, 1)


def interleaved(x, n):
    return x.repeat_interleave(n, dim=1)


def expanded(x, n):
    b, kv, length, hs = x.shape
    return x[:, :, None].expand(b, kv, n, length, hs).reshape(b, kv * n, length, hs)


def slopes():
    return torch.tensor([2.0 ** -(i + 1) for i in range(H)]).view(1, H, 1, 1)


def symmetric_bias(lq, lk):
    return -(torch.arange(lk)[None, :] - torch.arange(lq)[:, None]).abs() * slopes()


def causal_bias(lq, lk):
    return {causal_bias} * slopes()


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq, self.wk = nn.Linear(C, C), nn.Linear(C, KV * HS)
        self.wv, self.wo = nn.Linear(C, KV * HS), nn.Linear(C, C)

    def forward(self, x, memory, bias, causal, scale):
        q = self.wq(x)  # Snapshot #7 or #21 or #30
        k = self.wk(memory)  # Snapshot #8 or #22 or #31
        v = self.wv(memory)  # Snapshot #9 or #23 or #32
        lq, lk = x.shape[1], memory.shape[1]
        qh = q.view(B, lq, H, HS).transpose(1, 2)  # Snapshot #12 or #27
        kh = k.view(B, lk, KV, HS).transpose(1, 2){before}
        vh = v.view(B, lk, KV, HS).transpose(1, 2){before}
        kh = {k_repeat}(kh, H // KV){after}
        vh = {v_repeat}(vh, H // KV){after}
        scores = qh @ kh.transpose(-2, -1) * scale + bias  # Snapshot #10 or #24 or #33
        if causal:
            mask = torch.ones(lq, lk).tril().bool()  # Snapshot #25
            scores = scores.masked_fill(~mask, float("-inf"))
        probs = scores.softmax(-1)  # Snapshot #11 or #26 or #34
        ctx = (probs @ vh).transpose(1, 2).reshape(B, lq, C)  # Snapshot #13 or #28 or #35
        return self.wo(ctx)


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2, self.self_attn = nn.LayerNorm(C), nn.LayerNorm(C), Attention()
        self.w_gate, self.w_up = nn.Linear(C, M, bias=False), nn.Linear(C, M, bias=False)
        self.w_down = nn.Linear(M, C, bias=False)

    def forward(self, x):  # Snapshot #6
        a = self.ln_1(x)
        x = x + self.self_attn(a, a, symmetric_bias(S, S), False, {encoder_scale})  # Snapshot #15
        h = self.ln_2(x)  # Snapshot #16
        gate = F.silu(self.w_gate({gate_input}))  # Snapshot #17
        up = self.w_up(h)
        out = self.w_down(gate * up)  # Snapshot #18
        x = x + out  # Snapshot #19
        return x


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2, self.ln_3 = nn.LayerNorm(C), nn.LayerNorm(C), nn.LayerNorm(C)
        self.self_attn, self.cross_attn = Attention(), Attention()
        self.w_gate, self.w_up = nn.Linear(C, M, bias=False), nn.Linear(C, M, bias=False)
        self.w_down = nn.Linear(M, C, bias=False)

    def forward(self, x, memory):  # Snapshot #20
        a = self.ln_1(x)
        x = x + self.self_attn(a, a, causal_bias(T, T), True, {decoder_scale})  # Snapshot #29
        a = self.ln_2(x)
        x = x + self.cross_attn(a, memory, symmetric_bias(T, S), False, HS ** -0.5)  # Snapshot #36
        h = self.ln_3(x)  # Snapshot #37
        gate = F.silu(self.w_gate(h))  # Snapshot #38
        up = self.w_up(h)
        out = self.w_down(gate * up)  # Snapshot #39
        x = x + out  # Snapshot #40
        return x


with torch.no_grad():
    encoder, decoder = EncoderLayer().eval(), DecoderLayer().eval()
    memory = encoder(torch.randn(B, S, C))
    decoder(torch.randn(B, T, C), memory)
'''

KEY_ONLY = "(torch.arange(lk) - lk + 1).view(1, 1, 1, lk)"  # ALiBi's causal form: constant down each column
RELATIVE = "(torch.arange(lk)[None, :] - torch.arange(lq)[:, None]).clamp(max=0)"  # −(i − j) on the allowed keys


def _script(kv: int = 2, k_repeat: str = "interleaved", v_repeat: str | None = None, heads_after_repeat: bool = True,
            causal_bias: str = KEY_ONLY, encoder_scale: str = "HS ** -0.5", decoder_scale: str = "HS ** -0.5",
            gate_input: str = "h") -> str:
    mark = "  # Snapshot #12 or #27"
    return SCRIPT.format(kv=kv, k_repeat=k_repeat, v_repeat=v_repeat or k_repeat, causal_bias=causal_bias,
                         before="" if heads_after_repeat else mark, after=mark if heads_after_repeat else "",
                         encoder_scale=encoder_scale, decoder_scale=decoder_scale, gate_input=gate_input)


GROUPED_STEPS = ("#8", "#9", "#12", "#22", "#23", "#27", "#31", "#32", "#33", "#35")
SWIGLU_STEPS = ("#17", "#18", "#38", "#39")


@pytest.mark.parametrize("variant", [
    {}, {"k_repeat": "expanded"}, {"k_repeat": "tiled"}, {"kv": 1}, {"heads_after_repeat": False},
    {"causal_bias": RELATIVE},
], ids=["GQA repeat_interleave, key-only ALiBi", "GQA expand + reshape", "GQA tiled (repeat)",
        "multi-query (one key/value head)", "K/V heads marked before the repeat", "causal ALiBi as -(i - j)"])
def test_grouped_query_attention_alibi_and_swiglu_pass_and_say_which_form_fitted(tmp_path, variant):
    code, checks = traced(tmp_path, _script(**variant))
    assert code == 0, checks[""]["first_failure"]
    for label in (*GROUPED_STEPS, "#10", "#13", "#24", *SWIGLU_STEPS):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
    if variant.get("kv", 2) > 1 and variant.get("heads_after_repeat", True):
        order = "query head i reads key/value head i mod h_kv" if variant.get("k_repeat") == "tiled" else \
            "consecutive query heads share one"
        assert order in checks["#12"]["detail"] and order in checks["#33"]["detail"]
    if "causal_bias" not in variant:
        assert "ALiBi's key-only form; slopes per head 0.5, 0.25, 0.125, 0.0625" in checks["#24"]["detail"]
    assert "SiLU" in checks["#17"]["name"] and "gated hidden layer" in checks["#18"]["name"]


@pytest.mark.parametrize(("variant", "named", "forms"), [
    ({"encoder_scale": "1.0"}, "#10", {"1/√d missing"}),
    ({"decoder_scale": "1.0"}, "#24", {"1/√d missing"}),
    ({"k_repeat": "interleaved", "v_repeat": "tiled"}, "#12", {"key and value heads grouped differently"}),
    ({"gate_input": "x"}, "#17", {"computed from another tensor", "sublayer given the stream, not its LayerNorm"}),
], ids=["GQA scores without 1/√d", "key-only ALiBi scores without 1/√d", "K and V heads grouped differently",
        "SwiGLU gate given the un-normalised stream"])
def test_a_bug_in_each_form_is_named_first_with_its_bug_form(tmp_path, variant, named, forms):
    code, checks = traced(tmp_path, _script(**variant))
    assert code == 1 and checks[""]["first_failure"].startswith(named), checks[""]["first_failure"]
    assert checks[named]["evidence"]["name"] in forms, checks[named]


def test_a_bias_of_key_minus_query_up_to_a_constant_per_query_row_is_read_as_a_relative_bias():
    torch.manual_seed(0)
    product, slopes = torch.randn(2, 4, 5, 5), torch.tensor([0.5, 0.25, 0.125, 0.0625]).view(1, 4, 1, 1)
    key_only = (torch.arange(5) - 4).view(1, 1, 1, 5) * slopes  # (j − T + 1)·slope, constant down each column
    fits, detail = relative_bias(product + key_only, product)
    assert fits and "key-only form; slopes per head 0.5, 0.25, 0.125, 0.0625" in detail
    # a constant per query row alone carries no position; a bias that depends on the scores is none
    assert not relative_bias(product + torch.arange(5.0).view(1, 1, 5, 1) * slopes, product)[0]
    assert not relative_bias(product * 1.5 + key_only, product)[0]


@pytest.mark.parametrize(("order", "repeated"), [(INTERLEAVED, lambda x: x.repeat_interleave(2, dim=1)),
                                                  (TILED, lambda x: x.repeat(1, 2, 1, 1))])
def test_key_value_heads_are_read_in_the_group_order_that_fits(order, repeated):
    torch.manual_seed(0)
    keys = torch.randn(2, 7, 2 * 8)  # (B, L, h_kv·hs): 2 key/value heads of 8 for 4 query heads
    per_head = keys.view(2, 7, 2, 8).transpose(1, 2)
    assert kv_heads(keys, 4, 8) == 2 and kv_heads(per_head, 4, 8) == 2 and kv_heads(keys, 2, 8) is None
    heads, note = fitted_heads(keys, 4, 8, lambda heads: heads, repeated(per_head))
    assert torch.equal(heads, repeated(per_head)) and ORDER_WORDS[order] in note
