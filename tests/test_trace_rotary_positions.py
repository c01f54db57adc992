"""Rotary positions are a family of correct forms (issue 40, point 2; litgpt in tests/trace_fresh/ROUND5_GPT.md): the
queries and keys marked before the rotation, the attention's scores are Q'·K'ᵀ/√hs of them rotated — the halves paired
or neighbouring channels, all of each head or a part, any base. The rotation is fitted from the captured context, the
context and the merged heads are then checked (never unrecognised), and a bug after the rotation is named."""

from __future__ import annotations

import math

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.checks.rotary import Rotary, fit_rotary

ROTARY_GPT = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, H = 2, 8, 32, 4
HS = C // H
DIMS, BASE, INTERLEAVED = {dims}, {base}, {interleaved}


def rotate(x):
    """Rotary positions on the first DIMS channels of each head."""
    theta = BASE ** (-torch.arange(0, DIMS, 2).float() / DIMS)
    angles = torch.arange(x.shape[-2]).float()[:, None] * theta
    cos, sin = angles.cos(), angles.sin()
    part = x[..., :DIMS]
    if INTERLEAVED:
        pairs = torch.view_as_complex(part.reshape(*part.shape[:-1], -1, 2).contiguous())
        turned = torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), angles)).flatten(-2)
    else:
        first, second = part[..., :DIMS // 2], part[..., DIMS // 2:]
        turned = torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)
    return torch.cat((turned, x[..., DIMS:]), dim=-1)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)

    def forward(self, x):
        qkv = self.c_attn(x)  # BREAKPOINT G07
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, H, HS).transpose(1, 2)  # BREAKPOINT G08
        k = k.view(B, T, H, HS).transpose(1, 2)  # BREAKPOINT G09
        v = v.view(B, T, H, HS).transpose(1, 2)  # BREAKPOINT G10
        q, k = rotate(q), rotate(k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # BREAKPOINT G15
        y = y.transpose(1, 2).reshape(B, T, C)  # BREAKPOINT G16
        return self.c_proj(y)  # BREAKPOINT G17


with torch.no_grad():
    Attention().eval()(torch.randn(B, T, C))
'''

FORMS = {"rotate-half, a quarter of each head": dict(dims="HS // 4", base=10000, interleaved=False),
         "interleaved, all of each head": dict(dims="HS", base=10000, interleaved=True),
         "rotate-half, half of each head, base 500000": dict(dims="HS // 2", base=500000, interleaved=False)}


def script(form: str) -> str:
    return ROTARY_GPT.format(**FORMS[form])


@pytest.mark.parametrize("form", FORMS)
def test_a_rotary_attention_is_checked_at_its_context_and_merged_heads(tmp_path, form):
    code, checks = traced(tmp_path, script(form))
    assert code == 0, checks[""]
    for label in ("G15", "G16"):
        assert checks[label]["passed"] is True, checks[label]
        assert "rotary positions" in checks[label]["detail"], checks[label]


def test_a_rotary_attention_without_its_scaling_is_named_at_the_context(tmp_path):
    code, checks = traced(tmp_path, script("rotate-half, a quarter of each head").replace(
        "is_causal=True)", "is_causal=True, scale=1.0)"))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("G15"), checks[""]
    assert checks["G15"]["evidence"]["name"] == "1/√d missing", checks["G15"]


def test_rotary_heads_merged_without_moving_the_axis_back_are_named(tmp_path):
    code, checks = traced(tmp_path, script("interleaved, all of each head").replace(
        "y.transpose(1, 2).reshape(B, T, C)", "y.reshape(B, T, C)"))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("G16"), checks[""]
    assert checks["G16"]["evidence"]["name"] == "heads merged without moving the axis back", checks["G16"]


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    later = torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1) @ v


@pytest.mark.parametrize("member", [Rotary(16, 10000.0, False), Rotary(4, 10000.0, True), Rotary(8, 500000.0, True)],
                         ids=str)
def test_the_rotary_member_is_fitted_from_the_context(member):
    q, k, v = torch.randn(3, 2, 2, 6, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    found = fit_rotary(q, k, v, _attention(member.apply(q), member.apply(k), v), h=2)
    assert found is not None
    assert (found.dims, found.interleaved) == (member.dims, member.interleaved)
    assert torch.allclose(found.apply(q), member.apply(q))  # the base said is one that rotates as the code did


def test_no_rotation_is_fitted_where_the_plain_attention_fits_or_nothing_does():
    q, k, v = torch.randn(3, 2, 2, 6, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    assert fit_rotary(q, k, v, _attention(q, k, v), h=2) is None
    assert fit_rotary(q, k, v, torch.randn(2, 2, 6, 16, dtype=torch.float64), h=2) is None
