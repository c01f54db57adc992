"""Correct forms that public implementations traced fresh (tests/trace_fresh) wrote and the checks once failed: each
passes, says which form it recognised (with the parameter fitted, where there is one), and the bug that looks like it
still fails."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transformer_trace.checks import ResidualSumOrPostNorm
from transformer_trace.reports.encoder_decoder.catalogue import SNAPSHOTS as ENCODER_DECODER
from transformer_trace.sources import ModuleRef, Ref, TensorDict

B, T, C = 2, 5, 12

LAYER_STEP = ResidualSumOrPostNorm(out=Ref("marked"), operands=(Ref("x"), Ref("sub")), module=ModuleRef("ln"))


def layer_step(marked: str) -> TensorDict:
    """An encoder–decoder layer's residual step written as ``marked``: pre-norm (the plain sum), post-norm (its
    LayerNorm), or a bug (the residual dropped; the sublayer output added to the normalised input)."""
    torch.manual_seed(3)
    x, sub = torch.randn(B, T, C), torch.randn(B, T, C)
    gain, bias = torch.rand(C) + 0.5, torch.randn(C)
    norm = lambda t: F.layer_norm(t, (C,), gain, bias)  # noqa: E731
    tensors = {"pre-norm": x + sub, "post-norm": norm(x + sub), "dropped": sub, "normalised input": norm(x) + sub}
    return TensorDict({"x": x, "sub": sub, "marked": tensors[marked]})


@pytest.mark.parametrize("marked, claim", [("pre-norm", "is the residual sum input + sublayer output: a pre-norm layer"),
                                           ("post-norm", "equals LayerNorm(input + sublayer output)")])
def test_an_encoder_decoder_layer_step_passes_pre_norm_or_post_norm_and_names_the_form(marked, claim):
    result = LAYER_STEP.run(layer_step(marked))
    assert result.status == "passed" and result.name.startswith(claim)


@pytest.mark.parametrize("bug", ["dropped", "normalised input"])
def test_a_dropped_residual_or_the_normalised_input_added_back_is_neither_form(bug):
    assert LAYER_STEP.run(layer_step(bug)).status == "failed"


@pytest.mark.parametrize("number", [15, 19, 29, 36, 40])
def test_the_encoder_decoder_catalogue_accepts_either_form_at_every_residual_step(number):
    snapshot = next(s for s in ENCODER_DECODER if s.number == number)
    assert isinstance(snapshot.checks[0], ResidualSumOrPostNorm)


def test_a_class_token_picked_from_the_norm_applied_on_the_same_line_is_checked_against_the_norms_output():
    """`x = self.norm(x)[:, 0]`: the row is the norm's output's, not the row of the sequence the line read."""
    from transformer_trace.checks import RowEquals
    from transformer_trace.trace.child.protocol import ModuleKind
    from transformer_trace.trace.reading.capture import ModuleCall
    from transformer_trace.trace.reading.weights import bind

    torch.manual_seed(4)
    x = torch.randn(B, T, C)
    normed = F.layer_norm(x, (C,), torch.rand(C) + 0.5, torch.randn(C))
    calls = [ModuleCall("x", ModuleKind.LOCAL, 1, [], [x], {}, {}),
             ModuleCall("norm", ModuleKind.LAYER_NORM, 1, [x], [normed], {}, {})]
    check = RowEquals(out=Ref("cls"), source=Ref("final"), row=0, claim="is row 0 ([CLS]) of the final sequence")
    for picked, status in ((normed[:, 0], "passed"), (normed[:, -1], "failed")):
        bound = bind(check, calls, TensorDict({"cls": picked}), picked)
        result = bound.check.run(bound.source)
        assert result.status == status and "the norm and the row pick on one line" in bound.note


class OwnRMSNorm(torch.nn.Module):
    """gpt-fast's RMSNorm, as written there: one gain, no bias, ε inside the root."""

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps, self.weight = eps, torch.nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps) * self.weight


def norms() -> dict[str, torch.nn.Module]:
    torch.manual_seed(5)
    rms = torch.nn.RMSNorm(C, eps=1e-6)
    torch.nn.init.uniform_(rms.weight, 0.5, 1.5)
    layer = torch.nn.LayerNorm(C)
    torch.nn.init.uniform_(layer.weight, 0.5, 1.5)
    torch.nn.init.normal_(layer.bias)
    return {"nn.RMSNorm": rms, "own RMSNorm class": OwnRMSNorm(C), "nn.LayerNorm": layer}


@pytest.mark.parametrize("norm, claim, epsilon", [("nn.RMSNorm", "equals RMSNorm(its input)", "ε = 1e-06"),
                                                  ("own RMSNorm class", "equals RMSNorm(its input)", "ε = 1e-05"),
                                                  ("nn.LayerNorm", "equals LayerNorm(its input)", "")])
def test_a_layer_norm_step_fits_the_norms_kind_and_epsilon_and_says_which(norm, claim, epsilon):
    from transformer_trace.checks import LayerNormOf

    x = torch.randn(B, T, C) * 0.05  # small values: the epsilon shows in the output
    with torch.no_grad():
        out = norms()[norm](x)
    result = LayerNormOf(out=Ref("out"), x=Ref("x"), module=ModuleRef("ln_f")).run(TensorDict({"x": x, "out": out}))
    assert result.status == "passed" and result.name.startswith(claim) and epsilon in result.detail


def test_an_rms_norm_of_the_wrong_tensor_is_neither_norm():
    from transformer_trace.checks import LayerNormOf

    x, other = torch.randn(B, T, C), torch.randn(B, T, C)
    with torch.no_grad():
        out = OwnRMSNorm(C)(other)
    result = LayerNormOf(out=Ref("out"), x=Ref("x"), module=ModuleRef("ln_f")).run(TensorDict({"x": x, "out": out}))
    assert result.status == "failed"


MASK_SHAPE = ("1", "1", "T", "T")


@pytest.mark.parametrize("shape, dims, note", [
    # (a square mask in sequence-first code is read by the run's one layout: tests/test_trace_layout.py)
    ((8, 5, 5), {"B": 2, "T": 5, "h": 4}, "heads folded into the batch axis (B·h = 8, T, T)"),
])
def test_a_mask_in_another_correct_shape_is_read_and_the_reading_said(shape, dims, note):
    from transformer_trace.trace.reading.verify import LayoutStatus, layout

    read = layout(torch.zeros(shape), MASK_SHAPE, dims, {})
    assert read.status is LayoutStatus.LAYOUT and note in read.note and read.canonical.dim() == 4


@pytest.mark.parametrize("value", [float("-inf"), -1e9, -1e10, torch.finfo(torch.float32).min])
def test_a_causal_mask_with_any_masking_value_passes_and_the_value_is_said(value):
    from transformer_trace.reports.gpt.checks import CausalMaskBool, MaskedFillOf

    torch.manual_seed(6)
    scores = torch.randn(B, 3, T, T)
    mask = torch.zeros(T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), value)[None, None]
    masked = scores.masked_fill(mask < 0, value)
    source = TensorDict({"scores": scores, "masked": masked, "mask": mask})
    for check in (CausalMaskBool(masked=Ref("masked"), scores=Ref("scores"), mask=Ref("mask")),
                  MaskedFillOf(out=Ref("masked"), scores=Ref("scores"), mask=Ref("mask"))):
        result = check.run(source)
        assert result.status == "passed", result.detail
    shown = "−inf" if value == float("-inf") else f"{value:g}"
    assert f"{shown} where the mask blocks" in result.detail or "additive mask added" in result.detail


def test_a_finite_masking_value_that_lets_a_position_see_the_next_still_fails():
    from transformer_trace.reports.gpt.checks import CausalMaskBool

    scores = torch.randn(B, 3, T, T)
    mask = torch.zeros(T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(2), -1e9)[None, None]
    source = TensorDict({"scores": scores, "masked": scores + mask, "mask": mask})
    assert CausalMaskBool(masked=Ref("masked"), scores=Ref("scores"), mask=Ref("mask")).run(source).status == "failed"


WHISPER_DECODER = [["", "Whisper", None, False], ["decoder", "TextDecoder", "differ", False],
                   ["blocks", "ModuleList", None, False], ["0", "ResidualAttentionBlock", "differ", False]]


@pytest.mark.parametrize("path, use", [
    # whisper: the decoder's ResidualAttentionBlock, called with (x, xa), wraps its self- and cross-attention; only
    # the MultiHeadAttention inside owns the projections (with the ownership not recorded, the block's name decides)
    ([*WHISPER_DECODER, ["attn", "MultiHeadAttention", "one", True]], "decoder self-attention"),
    ([*WHISPER_DECODER, ["cross_attn", "MultiHeadAttention", "differ", True]], "cross-attention"),
    ([*(entry[:3] for entry in WHISPER_DECODER), ["attn", "MultiHeadAttention", "one"]], "decoder self-attention"),
    # jadore801120: the ScaledDotProductAttention inside slf_attn, called with q, k and v (which differ), owns nothing
    ([["", "Transformer", None, False], ["encoder", "Encoder", None, False], ["layer_stack", "ModuleList", None, False],
      ["0", "EncoderLayer", None, False], ["slf_attn", "MultiHeadAttention", "same", True],
      ["attention", "ScaledDotProductAttention", "differ", False]], "encoder self-attention"),
])
def test_the_attention_module_is_the_innermost_saying_attention_that_owns_the_projections(path, use):
    from transformer_trace.trace.reading.shared_lines import hit_use

    assert hit_use(path, self_uses=2).use == use


def test_the_running_path_says_which_modules_own_a_projection():
    from transformer_trace.trace.child.running_module import _projects

    block = torch.nn.Module()
    block.attn, block.mlp = torch.nn.MultiheadAttention(C, 2), torch.nn.Sequential(torch.nn.Linear(C, C))
    assert [_projects(m) for m in (block, block.attn, block.mlp)] == [False, True, True]


@pytest.mark.parametrize("attention, inputs, use", [("attn", "one", "decoder self-attention"),
                                                    ("cross_attn", "differ", "cross-attention")])
def test_a_block_class_whose_name_says_attention_is_not_taken_as_the_attention_module(attention, inputs, use):
    """whisper: the decoder's `ResidualAttentionBlock`, called with (x, xa), wraps its self- and cross-attention."""
    from transformer_trace.trace.reading.shared_lines import hit_use

    path = [["", "Whisper", None], ["decoder", "TextDecoder", "differ"], ["blocks.0", "ResidualAttentionBlock", "differ"],
            [attention, "MultiHeadAttention", inputs]]
    told = hit_use(path, self_uses=2)
    assert told.use == use and told.module.startswith(f"decoder.blocks.0.{attention}")


def test_a_line_of_the_decoder_layer_itself_is_the_decoders_though_the_layer_was_called_with_the_encoder_output():
    """whisper's `x = x + self.attn(...)` (#15 or #29) runs in the ResidualAttentionBlock only."""
    from transformer_trace.trace.reading.shared_lines import hit_use

    assert hit_use(WHISPER_DECODER, self_uses=2).use == "decoder self-attention"


@pytest.mark.parametrize("shape", [(50, 4), (50, 8), (50, 50)])
def test_one_items_slice_per_hit_of_attention_written_as_loops_is_not_compared_and_says_why(shape):
    """Pulfer's ViT: `for sequence in x: for head in range(2): q = q_mappings[head](sequence[:, 4 * head: ...])`."""
    from transformer_trace.trace.reading.verify import LayoutStatus, layout

    dims = {"B": 2, "h": 1, "N1": 50, "hs": 8}
    names = ("B", "h", "N1", "N1") if shape == (50, 50) else ("B", "h", "N1", "hs")
    read = layout(torch.zeros(shape), names, dims, {})
    assert read.status is LayoutStatus.UNBOUND and read.canonical is None and not read.unbound
    assert "attention written as loops over the items" in read.note


@pytest.mark.parametrize("diagonal, status", [(1, "passed"), (2, "failed")])
def test_a_causal_mask_whose_scores_no_step_shows_is_judged_by_its_pattern_alone(diagonal, status):
    """word_language_model: `nn.TransformerEncoder` masks inside; only the (T, T) mask is marked."""
    from transformer_trace.reports.gpt.checks import CausalMaskBool

    mask = torch.zeros(T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(diagonal), float("-inf"))[None, None]
    check = CausalMaskBool(masked=Ref("masked"), scores=Ref("scores"), mask=Ref("mask"))
    result = check.run(TensorDict({"mask": mask}))
    assert result.status == status and "the additive, 0 = allowed, −inf = blocked mask alone" in result.detail
