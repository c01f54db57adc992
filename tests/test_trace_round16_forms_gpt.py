"""Correct code in the forms round sixteen's fresh GPT-style implementations and encoder–decoders brought
(tests/trace_fresh/ROUND16_GPT.md), built here in scripts of our own, none from the upstream code:

- Gemma 2's sandwich norms, ``x + post_norm(sublayer(pre_norm(x)))``: the residual sum adds a norm of the sublayer
  output, a correct form, not "the residual taken from the normalised stream" (JacksonCakes/GeLinear: false reds at
  G18 and G23); the stream itself replaced by its norm stays that bug;
- a cross-attention inside the encoder (a Perceiver's latent array reading the input) on the line shared by the
  encoder's self-attention and the decoder's cross-attention: no step of the numbering, its hits left out, not taken
  for the decoder's cross-attention (esceptico/perceiver-io: a false red at #34, its (latents × inputs) weights read as
  the decoder's (queries × latents) transposed);
- soft-capped scores, Gemma 2's ``cap · tanh(Q·Kᵀ/√hs / cap)`` (JacksonCakes/GeLinear: G11 unrecognised), with their
  bug forms: the cap applied to Q·Kᵀ unscaled, the tanh given the scores undivided by the cap."""

from __future__ import annotations

from tests.conftest import trace_source as traced

SANDWICH = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C = 2, 6, 16


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(C) * 0.1)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + self.weight)


pre_norm, post_norm = RMSNorm(), RMSNorm()
proj = nn.Linear(C, C)
x = torch.randn(B, T, C)
with torch.no_grad():
    h = x  # BREAKPOINT G05
    normed = pre_norm(h)  # BREAKPOINT G06
    attn_out = proj(normed)  # BREAKPOINT G17
    summed = SUM  # BREAKPOINT G18
'''


def test_a_sandwich_norms_residual_sum_is_a_correct_form(tmp_path):
    """Gemma 2 (round sixteen's GeLinear): the attention output normalised before it joins the stream."""
    code, checks = traced(tmp_path, SANDWICH.replace("SUM", "h + post_norm(attn_out)"))
    assert code == 0, checks[""]
    assert checks["G18"]["passed"] is True, checks["G18"]["detail"]
    assert "sandwich norm" in checks["G18"]["name"]


def test_the_stream_replaced_by_its_norm_is_still_named(tmp_path):
    """``normed + attn_out``: the residual taken from the normalised stream, the bug the form keeps naming."""
    code, checks = traced(tmp_path, SANDWICH.replace("SUM", "post_norm(h) + attn_out"))
    assert code == 1
    assert checks["G18"]["passed"] is False
    assert checks["G18"]["evidence"]["name"] == "LayerNorm of the wrong tensor"


ENCODER_CROSS_ATTENTION = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, N, C = 2, 8, 6, 16  # the decoder's queries are the source's positions: T = S


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)

    def forward(self, inputs_kv, inputs_q):
        q, k = self.q(inputs_q).unsqueeze(1), self.k(inputs_kv).unsqueeze(1)  # one head
        scores = q @ k.transpose(-2, -1) / C ** 0.5  # Snapshot #10 or #33
        weights = scores.softmax(dim=-1)  # Snapshot #11 or #34
        return (weights @ self.v(inputs_kv).unsqueeze(1)).squeeze(1)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(N, C))
        self.cross_attn = Attention()
        self.self_attn = Attention()

    def forward(self, x):
        latents = self.cross_attn(x, self.latents.repeat(B, 1, 1))  # Snapshot #6
        return self.self_attn(latents, latents)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.cross_attention = Attention()

    def forward(self, query, latents):
        return self.cross_attention(latents, query)


encoder, decoder = Encoder(), Decoder()
with torch.no_grad():
    embeddings = torch.randn(B, S, C)  # Snapshot #5
    latents = encoder(embeddings)
    query = torch.randn(B, S, C)  # Snapshot #20
    out = decoder(query, latents)
'''


def test_an_encoders_cross_attention_is_not_read_as_the_decoders(tmp_path):
    """esceptico's Perceiver IO (round sixteen): the latent array's cross-attention to the input runs in the encoder;
    the decoder's cross-attention (#34) is the decoder's own, its rows over the latents."""
    code, checks = traced(tmp_path, ENCODER_CROSS_ATTENTION)
    assert code == 0, checks[""]
    assert checks["#34"]["passed"] is True, checks["#34"]["detail"]
    assert "16 rows over the keys" in checks["#34"]["detail"]  # the decoder's 8 queries per item, not the 6 latents
    assert checks["#11"]["passed"] is True, checks["#11"]["detail"]


SOFT_CAPPED_SCORES = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H = 2, 6, 32, 4
hs, cap = C // H, 2.0
W_q, W_k = nn.Linear(C, C, bias=False), nn.Linear(C, C, bias=False)
x = torch.randn(B, T, C) * 2
with torch.no_grad():
    q = W_q(x).view(B, T, H, hs).transpose(1, 2)  # BREAKPOINT G08
    k = W_k(x).view(B, T, H, hs).transpose(1, 2)  # BREAKPOINT G09
    qk = q @ k.transpose(-2, -1) * SCALE
    scores = CAPPED  # BREAKPOINT G11
'''


def _capped(tmp_path, scale="hs ** -0.5", capped="cap * torch.tanh(qk / cap)"):
    return traced(tmp_path, SOFT_CAPPED_SCORES.replace("SCALE", scale).replace("CAPPED", capped))


def test_soft_capped_scores_are_a_correct_form(tmp_path):
    """JacksonCakes' Gemma 2 (round sixteen): ``cap · tanh(q·kᵀ/√hs / cap)`` before the mask, unrecognised before."""
    code, checks = _capped(tmp_path)
    assert code == 0, checks[""]
    assert checks["G11"]["passed"] is True, checks["G11"]["detail"]
    assert "soft-capped" in checks["G11"]["name"]


def test_soft_capped_scores_without_the_scale_are_named(tmp_path):
    """The planted ``scaling_factor = 1``: the cap applied to Q·Kᵀ unscaled."""
    code, checks = _capped(tmp_path, scale="1")
    assert code == 1
    assert checks["G11"]["evidence"]["name"] == "1/√d missing", checks["G11"]


def test_a_soft_cap_whose_tanh_is_given_the_undivided_scores_is_named(tmp_path):
    """The planted ``qk = qk`` for ``qk = qk / cap``: cap · tanh(s)."""
    code, checks = _capped(tmp_path, capped="cap * torch.tanh(qk)")
    assert code == 1
    assert checks["G11"]["evidence"]["name"] == "soft cap undivided", checks["G11"]
