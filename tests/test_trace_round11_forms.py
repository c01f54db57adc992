"""Correct code in the forms round eleven's fresh GPT-style and encoder–decoder implementations brought
(tests/trace_fresh/ROUND11_GPT.md), each built here on its own, none from the upstream code: T5's attention (Q·Kᵀ with
no 1/√hs and a learned relative-position bias added between the scores and the softmax, boolean masks filled with
−1e4; its cross-attention unscaled with no bias), a sliding-window causal mask (Mistral's), and grouped-query keys
and values marked after their repeat to the query heads while the line reads them before it. Each passes and says
so; the bugs that look like them (1/√d missing with no bias or beside ALiBi's linear bias, a mask that lets a
position see the next, values grouped from the keys) are still named or fail."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_trace.checks import CausalMask, ScaledScores, SoftmaxRows
from transformer_trace.checks.calls import HeadsOfRead
from transformer_trace.reports.gpt.checks import CausalMaskBool
from transformer_trace.sources import Ref, TensorDict

B, H, L, HS = 2, 4, 7, 8


def _t5_attention(bias: str = "table", scale: float = 1.0, padded: int = 2) -> dict[str, torch.Tensor]:
    """Self-attention as T5 writes it: scores Q·Kᵀ × ``scale`` (T5: 1), then, on the softmax's line, a relative bias
    (``bias``: "table", one learned value per head and key − query offset; "alibi", −slope·|i − j|; "none") and a
    padding mask (the second item's last ``padded`` tokens) filled with −1e4 — padded queries see no key and come out
    uniform."""
    torch.manual_seed(0)
    q, k = torch.randn(B, H, L, HS), torch.randn(B, H, L, HS)
    offsets = torch.arange(L)[None, :] - torch.arange(L)[:, None]
    table = {"table": torch.randn(H, 2 * L - 1)[:, offsets + L - 1],
             "alibi": -offsets.abs() * torch.tensor([0.5, 0.25, 0.125, 0.0625]).view(H, 1, 1),
             "none": torch.zeros(H, L, L)}[bias]
    keep = torch.ones(B, L, dtype=torch.bool)
    keep[1, L - padded:] = False
    allowed = (keep[:, None, :] & keep[:, :, None]).unsqueeze(1)  # (B, 1, L, L): True = attend
    scores = q @ k.transpose(-2, -1) * scale
    probs = torch.softmax((scores + table).masked_fill(~allowed, -1e4), dim=-1)
    return {"scores": scores, "q": q, "k": k, "probs": probs}


SCORES = ScaledScores(out=Ref("scores"), q=Ref("q"), k=Ref("k"), probs=Ref("probs"))
SOFTMAX = SoftmaxRows(out=Ref("probs"), scores=Ref("scores"), q=Ref("q"), k=Ref("k"))


def test_t5s_unscaled_scores_with_a_learned_relative_bias_at_the_softmax_pass_and_say_so():
    source = TensorDict(_t5_attention())
    scores, softmax = SCORES.run(source), SOFTMAX.run(source)
    assert scores.status == "passed" and "T5's attention" in scores.name, scores.detail
    assert "the bias added at the softmax" in scores.detail
    assert softmax.status == "passed" and "relative position bias (T5's)" in softmax.detail, softmax.detail


@pytest.mark.parametrize("bias", ["none", "alibi"])
def test_unscaled_scores_without_a_learned_bias_are_still_1_over_sqrt_d_missing(bias):
    # no bias at all, or ALiBi's linear one (whose models scale their scores): no T5 attention
    result = SCORES.run(TensorDict(_t5_attention(bias=bias)))
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "1/√d missing"


def test_a_t5_cross_attention_unscaled_with_no_bias_passes_beside_a_self_attention_read_as_t5s():
    self_attention, cross = _t5_attention(), _t5_attention(bias="none")
    tensors = {**{f"self_{name}": t for name, t in self_attention.items()}, **cross}
    sibling = ScaledScores(out=Ref("self_scores"), q=Ref("self_q"), k=Ref("self_k"), probs=Ref("self_probs"))
    with_sibling = ScaledScores(out=Ref("scores"), q=Ref("q"), k=Ref("k"), probs=Ref("probs"), sibling=sibling)
    result = with_sibling.run(TensorDict(tensors))
    assert result.status == "passed" and "which reads as T5's" in result.detail, result.detail
    scaled_sibling = {**tensors, "self_scores": self_attention["scores"] / math.sqrt(HS)}  # a scaled model's
    assert with_sibling.run(TensorDict(scaled_sibling)).evidence.name == "1/√d missing"


def _band(window: int, later: int = 0) -> torch.Tensor:
    """A boolean mask, True = allowed, of the keys from ``window`` before the query to ``later`` after it."""
    distance = torch.arange(8)[:, None] - torch.arange(8)[None, :]
    return ((distance >= -later) & (distance <= window)).view(1, 1, 8, 8)


@pytest.mark.parametrize("check", [CausalMask(out=Ref("mask")), CausalMaskBool(mask=Ref("mask"))],
                         ids=["encoder-decoder", "GPT"])
def test_a_sliding_window_causal_mask_passes_with_its_width_and_a_mask_that_sees_the_next_still_fails(check):
    window = check.run(TensorDict({"mask": _band(3)}))
    assert window.status == "passed" and "further back than 3 positions blocked" in window.detail, window.detail
    assert check.run(TensorDict({"mask": _band(3, later=1)})).status == "failed"
    assert check.run(TensorDict({"mask": _band(3) & ~torch.eye(8, dtype=torch.bool)})).status != "passed"


def test_grouped_keys_marked_after_their_repeat_are_the_heads_the_line_read_and_values_from_the_keys_are_not():
    torch.manual_seed(0)
    keys, values = torch.randn(B, 2, L, HS), torch.randn(B, 2, L, HS)  # 2 key/value heads for 4 query heads
    check = HeadsOfRead(out=Ref("attn.v"), parts=(Ref("v_read"),), part=2)
    k_group = keys.repeat_interleave(2, dim=1)
    grouped = check.run(TensorDict({"attn.v": values.repeat_interleave(2, dim=1), "v_read": values, "attn.k": k_group}))
    assert grouped.status == "passed" and "grouped-query attention: 2 key/value heads for 4" in grouped.detail
    assert check.run(TensorDict({"attn.v": k_group, "v_read": values, "attn.k": k_group})).status != "passed"
    from_keys = check.run(TensorDict({"attn.v": k_group, "v_read": keys, "attn.k": k_group}))  # the line read the keys
    assert from_keys.status == "failed" and from_keys.evidence is not None, from_keys.detail
    assert from_keys.evidence.name == "computed from another tensor"


def test_t5s_scores_still_pass_where_the_softmax_ran_over_the_queries_and_the_softmax_step_names_that():
    source = _t5_attention(padded=0)
    source["probs"] = torch.softmax(source["scores"] + torch.randn(H, 2 * L - 1)[:, torch.arange(L)[None, :]
                                    - torch.arange(L)[:, None] + L - 1], dim=-2)  # the wrong axis
    assert SCORES.run(TensorDict(source)).status == "passed"
    softmax = SOFTMAX.run(TensorDict(source))
    assert softmax.status == "failed" and softmax.evidence.name == "softmax over the wrong axis", softmax.detail
