"""Correct forms that round four's fresh GPT-style and encoder–decoder implementations
(tests/trace_fresh/ROUND4_GPT.md) wrote and the checks did not know: each passes and says the form, and the bug that
looks like it is still named."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_trace.checks import LinearOf, ScaledScores, SoftmaxRows
from transformer_trace.reports import REPORTS
from transformer_trace.sources import ModuleRef, Ref, TensorDict

B, H, L, HS = 2, 4, 6, 8
C = H * HS


def attention(scale_at_softmax: float) -> TensorDict:
    """Unscaled scores Q·Kᵀ (as aladdinpersson's `einsum` and pguso's `queries @ keys.T` leave them) and weights that
    are the softmax of those scores times ``scale_at_softmax`` (the scale applied inside the softmax)."""
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(B, H, L, HS, generator=generator), torch.randn(B, H, L, HS, generator=generator)
    scores = q @ k.transpose(-2, -1)
    return TensorDict({"q": q, "k": k, "scores": scores, "probs": torch.softmax(scores * scale_at_softmax, dim=-1)})


SCORES = ScaledScores(out=Ref("scores"), q=Ref("q"), k=Ref("k"), probs=Ref("probs"), probs_label="the weights")
WEIGHTS = SoftmaxRows(out=Ref("probs"), scores=Ref("scores"))


@pytest.mark.parametrize("scale", [1 / math.sqrt(HS), 1 / math.sqrt(C)], ids=["1/sqrt(hs)", "1/sqrt(C)"])
def test_unscaled_scores_whose_scale_is_applied_inside_the_softmax_pass_at_the_scores(scale):
    result = SCORES.run(attention(scale))
    assert result.passed, result.detail
    assert "applied at the softmax" in result.name


def test_a_scale_other_than_one_over_root_hs_inside_the_softmax_is_named_at_the_softmax():
    result = WEIGHTS.run(attention(1 / math.sqrt(C)))
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "another scaling inside the softmax" and "0.1768" in result.detail


def test_scores_never_scaled_anywhere_are_named_one_over_root_d_missing():
    result = SCORES.run(attention(1.0))
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "1/√d missing"


@pytest.mark.parametrize("report", ["encoder-decoder", "vit", "gpt"])
def test_every_catalogues_scores_check_reads_the_softmax_step_so_a_scale_applied_there_is_seen(report):
    snapshots = REPORTS[report].snapshots
    checks = [check for snapshot in snapshots for check in snapshot.checks if isinstance(check, ScaledScores)]
    assert checks and all(check.probs is not None for check in checks)


class SharedHeadLinear(torch.nn.Module):
    """One Linear(hs, hs) for every head, applied to the input split into heads (aladdinpersson's SelfAttention)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(HS, HS, bias=False)


def test_a_projection_shared_by_the_heads_is_recomputed_on_the_input_split_into_heads():
    torch.manual_seed(0)
    owner = SharedHeadLinear()
    x = torch.randn(B, L, C)
    per_head = owner.proj(x.reshape(B, L, H, HS)).detach()  # (B, L, h, hs), as the script's line left it
    check = LinearOf(out=Ref("q"), x=Ref("x"), module=ModuleRef("proj"))
    for captured in (per_head, per_head.reshape(B, L, C)):
        result = check.run(TensorDict({"q": captured, "x": x}, modules={"proj": owner.proj}))
        assert result.passed, result.detail
    wrong = per_head.clone()
    wrong[..., 0] += 1.0
    assert check.run(TensorDict({"q": wrong, "x": x}, modules={"proj": owner.proj})).status == "failed"


@pytest.mark.parametrize("part", [0, 1], ids=["keys", "values"])
def test_a_fused_key_value_projection_split_on_the_line_is_read_as_the_projection(part):
    """sgrvinod's ``keys, values = self.cast_keys_values(x).split(h·d, dim=-1)``: one Linear(C, 2C) for both."""
    torch.manual_seed(0)
    fused = torch.nn.Linear(C, 2 * C)
    x = torch.randn(B, L, C)
    step = fused(x).detach().split(C, dim=-1)[part]
    check = LinearOf(out=Ref("k"), x=Ref("x"), module=ModuleRef("cast_keys_values"))
    result = check.run(TensorDict({"k": step, "x": x}, modules={"cast_keys_values": fused}))
    assert result.passed, result.detail
    other_input = check.run(TensorDict({"k": step, "x": torch.randn(B, L, C)}, modules={"cast_keys_values": fused}))
    assert other_input.status == "failed"


def test_a_first_feed_forward_layer_marked_after_its_relu_on_the_same_line_is_read_as_that_layer():
    """sgrvinod's ``sequences = self.apply_dropout(self.relu(self.fc1(sequences)))``: the step is ReLU(fc1(x))."""
    torch.manual_seed(0)
    fc1 = torch.nn.Linear(C, 2 * C)
    x = torch.randn(B, L, C)
    check = LinearOf(out=Ref("ff1"), x=Ref("x"), module=ModuleRef("fc1"))
    result = check.run(TensorDict({"ff1": torch.relu(fc1(x)).detach(), "x": x}, modules={"fc1": fc1}))
    assert result.passed and "through a ReLU" in result.name, result.detail
    wrong = check.run(TensorDict({"ff1": torch.relu(fc1(x + 1)).detach(), "x": x}, modules={"fc1": fc1}))
    assert wrong.status == "failed"


@pytest.mark.parametrize("padded", [False, True], ids=["no mask", "a padded key filled with -1e20"])
def test_a_softmax_over_the_query_axis_with_its_scale_inside_is_named_at_the_softmax_not_as_a_missing_scale(padded):
    torch_data = attention(1 / math.sqrt(C))
    scores = torch_data.tensors["scores"]
    masked = scores.clone()
    if padded:  # aladdinpersson's masked_fill(mask == 0, -1e20): a whole key column, uniform under a softmax over queries
        masked[..., -1] = -1e20
    wrong_axis = TensorDict({**torch_data.tensors, "probs": torch.softmax(masked / math.sqrt(C), dim=-2)})
    assert SCORES.run(wrong_axis).passed
    result = WEIGHTS.run(wrong_axis)
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "softmax over the wrong axis"
