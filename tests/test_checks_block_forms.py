"""Correct code written in a form the checks once failed: the 1/√hs applied inside the softmax after the mask (the
scores Q·Kᵀ unscaled), and a post-norm GPT block (its second residual sum adds the normalised stream, its output is a
LayerNorm of that sum), and a pre-norm ViT's "residual + norm" step marked on the plain residual sum (its LayerNorm on
the next line). Each form passes and says so; the bugs that look like them still fail."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_trace.checks import (
    ResidualOrPostNorm, ResidualSumEitherNorm, ResidualThenNorm, ScaledScores, SoftmaxRows,
)
from transformer_trace.sources import ModuleRef, Ref, TensorDict

B, H, T, HS, C = 2, 3, 5, 8, 12


def attention(scale_in_scores: bool, scale_in_softmax: bool, axis: int = -1) -> TensorDict:
    torch.manual_seed(0)
    q, k = torch.randn(B, H, T, HS), torch.randn(B, H, T, HS)
    scores = q @ k.transpose(-2, -1) / (math.sqrt(HS) if scale_in_scores else 1.0)
    masked = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    probs = torch.softmax(masked / (math.sqrt(HS) if scale_in_softmax else 1.0), dim=axis)
    return TensorDict({"q": q, "k": k, "scores": scores, "masked": masked, "probs": probs})


SCORES = ScaledScores(out=Ref("scores"), q=Ref("q"), k=Ref("k"), probs=Ref("probs"), probs_label="G14")
SOFTMAX = SoftmaxRows(out=Ref("probs"), scores=Ref("masked"), causal=True, q=Ref("q"), k=Ref("k"))


def test_unscaled_scores_pass_where_the_softmax_applies_the_scale_and_say_so():
    source = attention(scale_in_scores=False, scale_in_softmax=True)
    scores, softmax = SCORES.run(source), SOFTMAX.run(source)
    assert scores.status == "passed" and "the 1/√hs applied at the softmax (G14)" in scores.name
    assert softmax.status == "passed" and "the 1/√8 applied inside the softmax" in softmax.detail


def test_without_the_probabilities_unscaled_scores_still_fail_and_nothing_turns_not_checkable():
    source = attention(scale_in_scores=False, scale_in_softmax=True)
    del source.tensors["probs"]
    result = SCORES.run(source)
    assert result.status == "failed" and "without the 1/√8" in result.detail
    assert SOFTMAX.run(attention(True, False)).status == "passed"  # the scaled scores' plain softmax, as before
    plain = TensorDict({name: t for name, t in attention(True, False).tensors.items() if name not in ("q", "k")})
    assert SOFTMAX.run(plain).status == "passed"


def test_a_scale_missing_from_the_scores_and_the_softmax_fails_at_the_scores():
    source = attention(scale_in_scores=False, scale_in_softmax=False)
    result = SCORES.run(source)
    assert result.status == "failed" and "without the 1/√8" in result.detail and "G14 is not its softmax" in result.detail
    assert SOFTMAX.run(source).status == "passed"  # the probabilities are the softmax of what they read


def test_a_softmax_over_the_wrong_axis_is_not_blamed_on_the_scores_but_fails_at_the_softmax():
    source = attention(scale_in_scores=False, scale_in_softmax=True, axis=-2)
    assert SCORES.run(source).status == "passed"
    result = SOFTMAX.run(source)
    assert result.status == "failed" and "wrong axis" in result.detail


def test_a_scale_applied_twice_fails_at_the_softmax():
    source = attention(scale_in_scores=True, scale_in_softmax=True)
    assert SCORES.run(source).status == "passed"
    assert SOFTMAX.run(source).status == "failed"


def block(form: str) -> TensorDict:
    """One block's tensors: the first residual sum and its LayerNorm, the MLP output, the second sum and the output,
    as a pre-norm or post-norm block computes them, or with a bug."""
    torch.manual_seed(1)
    x, attn_out, mlp_out = torch.randn(B, T, C), torch.randn(B, T, C), torch.randn(B, T, C)
    gain, bias = torch.rand(C) + 0.5, torch.randn(C)
    norm = lambda t: F.layer_norm(t, (C,), gain, bias)  # noqa: E731
    residual_1 = x + attn_out
    ln_2 = norm(residual_1)
    residual_2 = {"pre": residual_1 + mlp_out, "post": ln_2 + mlp_out, "dropped": mlp_out,
                  "normalised stream, no norm after": ln_2 + mlp_out, "wrong tensor": ln_2 + mlp_out}[form]
    output = {"pre": residual_2, "dropped": norm(mlp_out), "normalised stream, no norm after": residual_2,
              "wrong tensor": norm(x + mlp_out)}.get(form, norm(residual_2))
    return TensorDict({"r1": residual_1, "ln2": ln_2, "mlp": mlp_out, "r2": residual_2, "out": output})


SECOND_SUM = ResidualSumEitherNorm(out=Ref("r2"), operands=(Ref("r1"), Ref("mlp")), post_norm=(Ref("ln2"), Ref("mlp")),
                                   block_out=Ref("out"))
OUTPUT = ResidualOrPostNorm(out=Ref("out"), source=Ref("r2"), claim="is the second residual sum",
                            operands=(Ref("ln2"), Ref("mlp")), module=ModuleRef("ln_post"), post_claim="is LayerNorm")


@pytest.mark.parametrize("form, claim", [("pre", "is the second residual sum"), ("post", "is LayerNorm")])
def test_a_block_passes_pre_norm_or_post_norm_and_names_the_form(form, claim):
    source = block(form)
    assert SECOND_SUM.run(source).status == "passed"
    result = OUTPUT.run(source)
    assert result.status == "passed" and result.name == claim


def test_a_post_norm_blocks_unmarked_second_sum_is_derived_from_the_normalised_stream():
    source = block("post")
    del source.tensors["r2"]
    assert torch.allclose(SECOND_SUM.derive(source), source.t("ln2") + source.t("mlp"))
    pre = block("pre")
    del pre.tensors["r2"]
    assert torch.allclose(SECOND_SUM.derive(pre), pre.t("r1") + pre.t("mlp"))


def test_a_dropped_residual_fails_at_the_second_sum_and_the_output_is_read_as_that_sums_layer_norm():
    # the bug is named where it happens; the block output, a LayerNorm of the sum as captured, does not repeat it
    source = block("dropped")
    assert SECOND_SUM.run(source).status == "failed"
    result = OUTPUT.run(source)
    assert result.status == "passed" and result.name.startswith("is LayerNorm(r2)")


def test_a_layer_norm_of_the_wrong_tensor_is_neither_form():
    source = block("wrong tensor")
    assert SECOND_SUM.run(source).status == "passed"
    result = OUTPUT.run(source)
    assert result.status == "failed" and "nor is it the post-norm form" in result.detail


def test_a_pre_norm_block_that_adds_its_layer_norms_output_back_fails_at_the_second_sum():
    assert SECOND_SUM.run(block("normalised stream, no norm after")).status == "failed"


def test_where_the_post_norm_operands_are_not_captured_the_block_output_is_judged_pre_norm_as_before():
    source = block("pre")
    del source.tensors["ln2"]
    assert OUTPUT.run(source).status == "passed"
    post = block("post")
    del post.tensors["ln2"]
    assert OUTPUT.run(post).status == "failed"


RESIDUAL_THEN_NORM = ResidualThenNorm(out=Ref("marked"), operands=(Ref("x"), Ref("attn")), module=ModuleRef("ln_2"))


def vit_block(marked: str) -> TensorDict:
    """A pre-norm ViT block's first residual: the step marked as ``marked`` (the sum "raw", its LayerNorm "normed", or
    a bug)."""
    torch.manual_seed(2)
    x, attn = torch.randn(B, T, C), torch.randn(B, T, C)
    gain, bias = torch.rand(C) + 0.5, torch.randn(C)
    norm = lambda t: F.layer_norm(t, (C,), gain, bias)  # noqa: E731
    tensors = {"raw": x + attn, "normed": norm(x + attn), "dropped": attn, "wrong tensor": norm(x)}
    return TensorDict({"x": x, "attn": attn, "marked": tensors[marked]})


@pytest.mark.parametrize("marked, claim", [("raw", "is the residual sum"), ("normed", "equals LayerNorm")])
def test_the_residual_and_norm_step_passes_on_the_sum_or_its_layer_norm_and_names_which(marked, claim):
    result = RESIDUAL_THEN_NORM.run(vit_block(marked))
    assert result.status == "passed" and result.name.startswith(claim)


@pytest.mark.parametrize("bug", ["dropped", "wrong tensor"])
def test_a_dropped_residual_or_a_layer_norm_of_the_wrong_tensor_is_neither_the_sum_nor_its_norm(bug):
    result = RESIDUAL_THEN_NORM.run(vit_block(bug))
    assert result.status == "failed" and result.name == "is LayerNorm(input + sublayer output), or that sum itself"
    assert "nor is it the residual sum itself" in result.detail
