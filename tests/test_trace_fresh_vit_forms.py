"""Correct forms that round two's fresh ViTs (tests/trace_fresh/ROUND2_VIT.md: openai/CLIP, labml.ai's annotated ViT,
phlippe's UvA notebook) wrote and `trace` read as unrecognised, so that a bug planted on the same step went unseen:
each now passes, and the planted bug is named with its form."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transformer_trace.checks import RowEquals, SumOf
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.call_layout import catalogue_order, in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.residuals import sublayer_bound
from transformer_trace.trace.reading.bound_run import run_bound
from transformer_trace.trace.reading.weights import bind

B, T, C = 2, 5, 12
POOLED = RowEquals(out=Ref("cls"), source=Ref("final"), row=0, claim="is row 0 ([CLS]) of the final sequence")


def call(module: str, kind: ModuleKind, inputs: list, outputs: list, params: dict | None = None) -> ModuleCall:
    return ModuleCall(module, kind, 1, inputs, outputs, params or {}, {"eps": 1e-5} if params else {})


def layer_norm() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(6)
    return torch.rand(C) + 0.5, torch.randn(C)


def pooled_result(picked: torch.Tensor, calls: list[ModuleCall]):
    bound = bind(POOLED, calls, TensorDict({"cls": picked}), picked)
    assert bound is not None, "the sequence the line read is found"
    return bound, run_bound(bound)


@pytest.mark.parametrize("row, status", [(0, "passed"), (-1, "failed")])
def test_a_class_row_picked_then_normalised_is_checked_against_the_norm_of_every_row(row, status):
    """CLIP's `self.ln_post(x[:, 0, :])`: the LayerNorm after the pick is the same norm on every token, so the row is
    row 0 of the normalised sequence; the last patch pooled instead is named as the wrong token."""
    x, (gain, bias) = torch.randn(B, T, C), layer_norm()
    picked = F.layer_norm(x[:, row, :], (C,), gain, bias)
    calls = [call("x", ModuleKind.LOCAL, [], [x]),
             call("LayerNorm", ModuleKind.LAYER_NORM, [x[:, row, :]], [picked], {"weight": gain, "bias": bias})]
    bound, result = pooled_result(picked, calls)
    assert result.status == status and "a LayerNorm acts on each token alone" in bound.note
    if status == "failed":
        assert result.evidence.name == "the wrong token pooled" and f"row {T - 1} of LayerNorm(x)" in result.detail


@pytest.mark.parametrize("row, status", [(0, "passed"), (-1, "failed")])
def test_row_0_of_a_sequence_first_tensor_is_the_class_token_read_batch_first(row, status):
    """phlippe's `cls = x[0]` of a (T, B, C) sequence: row 0 of the tokens axis, not batch item 0."""
    x = torch.randn(T, B, C)
    bound, result = pooled_result(x[row], [call("x", ModuleKind.LOCAL, [], [x])])
    assert result.status == status and "sequence-first (N, B, D), read as (B, N, D)" in bound.note
    if status == "failed":
        assert result.evidence.name == "the wrong token pooled"


def test_a_step_read_in_another_axis_order_gives_its_calls_that_order():
    raw = torch.randn(T, B, C)
    order = catalogue_order(raw, raw.transpose(0, 1))
    assert order == (1, 0, 2) and torch.equal(in_order(raw, order), raw.transpose(0, 1))
    assert catalogue_order(raw, raw) is None and catalogue_order(raw, torch.randn(B, T, C)) is None
    # a sequence-first head step (T, B, h, hs) read as (B, h, T, hs): the (T, B, C) stream its line read, as (B, T, C)
    heads = torch.randn(T, B, 3, 4)
    assert torch.equal(in_order(raw, catalogue_order(heads, heads.permute(1, 2, 0, 3))), raw.transpose(0, 1))


MLP_RESIDUAL = SumOf(out=Ref("out"), operands=(Ref("x"), Ref("attn_out"), Ref("mlp_out")))


@pytest.mark.parametrize("written, status", [("x + mlp(ln_2(x))", "passed"), ("mlp(ln_2(x))", "failed")])
def test_a_sequence_first_mlp_residual_without_the_attention_output_is_read_from_the_stream_its_norm_read(written,
                                                                                                          status):
    """phlippe's `x = x + self.linear(self.layer_norm_2(x))` in (T, B, C), the attention's output inside an
    nn.MultiheadAttention (S15 not captured): the stream is the LayerNorm's input, which equals the captured residual
    sum S16; the MLP's output comes from its call, in the step's layout; the residual dropped is named."""
    torch.manual_seed(7)
    block_input, attn_out = torch.randn(T, B, C), torch.randn(T, B, C)
    stream = block_input + attn_out
    (gain, bias), sub = layer_norm(), torch.randn(T, B, C)
    normed = F.layer_norm(stream, (C,), gain, bias)
    main = stream + sub if written.startswith("x +") else sub
    calls = [call("LayerNorm", ModuleKind.LAYER_NORM, [stream], [normed], {"weight": gain, "bias": bias}),
             call("Sequential", ModuleKind.USER, [normed], [sub])]
    source = TensorDict({"x": block_input.transpose(0, 1), "residual_1": stream.transpose(0, 1),
                         "out": main.transpose(0, 1)})
    bound = sublayer_bound(MLP_RESIDUAL, calls, source, main, catalogue_order(main, main.transpose(0, 1)))
    assert bound is not None and "the stream it is added to as residual_1" in bound.note
    result = run_bound(bound)
    assert result.status == status
    if status == "failed":
        assert result.evidence.name == "residual dropped"


@pytest.mark.parametrize("row, status", [(0, "passed"), (-1, "failed")])
def test_a_row_normalised_on_its_own_line_is_found_in_the_last_layers_captured_sequence(row, status):
    """labml.ai's `x = x[0]` (unmarked), then `x = self.ln(x)` marked S24: the line read only the row; the sequence it
    came from is the captured output of the last layer that holds it, through the line's norm."""
    torch.manual_seed(8)
    first, last = torch.randn(B, T, C), torch.randn(B, T, C)
    (gain, bias), picked_row = layer_norm(), last[:, row]
    cls = F.layer_norm(picked_row, (C,), gain, bias)
    calls = [call("LayerNorm", ModuleKind.LAYER_NORM, [picked_row], [cls], {"weight": gain, "bias": bias})]
    source = TensorDict({"cls": cls, "blocks.0.output": first, "blocks.1.output": last})
    bound = bind(POOLED, calls, source, cls)
    assert bound is not None and "blocks.1.output, the last layer's sequence" in bound.note
    result = run_bound(bound)
    assert result.status == status
    if status == "failed":
        assert result.evidence.name == "the wrong token pooled"


def test_a_row_of_an_earlier_layer_normalised_is_not_taken_for_the_final_sequences():
    first, last = torch.randn(B, T, C), torch.randn(B, T, C)
    gain, bias = layer_norm()
    cls = F.layer_norm(first[:, 0], (C,), gain, bias)
    calls = [call("LayerNorm", ModuleKind.LAYER_NORM, [first[:, 0]], [cls], {"weight": gain, "bias": bias})]
    assert bind(POOLED, calls, TensorDict({"cls": cls, "blocks.0.output": first, "blocks.1.output": last}), cls) is None
