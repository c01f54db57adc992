"""Correct code in the forms round sixteen's fresh GPT-style implementations and encoder–decoders brought
(tests/trace_fresh/ROUND16_GPT.md), built here in scripts of our own, none from the upstream code:

- Gemma 2's sandwich norms, ``x + post_norm(sublayer(pre_norm(x)))``: the residual sum adds a norm of the sublayer
  output, a correct form, not "the residual taken from the normalised stream" (JacksonCakes/GeLinear: false reds at
  G18 and G23); the stream itself replaced by its norm stays that bug."""

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
