"""Correct forms that round three's fresh ViTs (tests/trace_fresh/ROUND3_VIT.md: jankrepl's single-file ViT, DINOv2,
asyml's port of the JAX ViT) wrote and `trace` did not know, so that a bug planted on the same step went unseen: each
now passes and says its form, and the planted bug is named with its form. Small synthetic tensors only."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from transformer_trace.checks import ProjectionOfHeads, SameTensor, SumOf
from transformer_trace.checks.base import needs_evidence
from transformer_trace.checks.normalisation import ResidualThenNorm
from transformer_trace.reports import REPORTS
from transformer_trace.sources import ModuleRef, Ref, TensorDict
from transformer_trace.trace.reading.projections import user_projection
from transformer_trace.trace.reading.run_layout import StepShape, read_run_layout

B, N1, C = 2, 9, 12
MLP_RESIDUAL = SumOf(out=Ref("out"), operands=(Ref("x"), Ref("attn_out"), Ref("mlp_out")))
ATTENTION_RESIDUAL = ResidualThenNorm(out=Ref("out"), operands=(Ref("x"), Ref("attn_out")), module=ModuleRef("ln_2"))


def stream_and_sublayers() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(3)
    return (torch.randn(B, N1, C), torch.randn(B, N1, C), torch.randn(B, N1, C), torch.rand(C) + 0.2,
            torch.rand(C) + 0.2)


def test_layer_scale_on_every_sublayer_output_is_the_residual_sum_with_its_gains_fitted():
    """DINOv2's `x + ls1(attn(norm1(x)))`, then `x + ls2(mlp(norm2(x)))`: S19 = S08 + γ1·S15 + γ2·S18."""
    x, attn, mlp, gamma1, gamma2 = stream_and_sublayers()
    result = MLP_RESIDUAL.run(TensorDict({"x": x, "attn_out": attn, "mlp_out": mlp,
                                          "out": x + gamma1 * attn + gamma2 * mlp}))
    assert result.passed, result.detail
    assert "LayerScale" in result.name and "gain per channel" in result.name


def test_layer_scale_on_the_attention_residual_passes_the_residual_then_norm_step():
    x, attn, _, gamma1, _ = stream_and_sublayers()
    result = ATTENTION_RESIDUAL.run(TensorDict({"x": x, "attn_out": attn, "out": x + gamma1 * attn}))
    assert result.passed and "LayerScale" in result.name, result.detail


@pytest.mark.parametrize("check", [MLP_RESIDUAL, ATTENTION_RESIDUAL], ids=["S19", "S16"])
def test_a_residual_dropped_under_layer_scale_is_named_as_the_residual_dropped(check):
    """DINOv2 B2: `x = attn_residual_func(x)`: the scaled sublayer outputs alone, the stream left out."""
    x, attn, mlp, gamma1, gamma2 = stream_and_sublayers()
    tensors = {"x": x, "attn_out": attn, "mlp_out": mlp}
    tensors["out"] = gamma1 * attn + (gamma2 * mlp if check is MLP_RESIDUAL else 0)
    result = check.run(TensorDict(tensors))
    assert result.status == "failed" and result.evidence.name == "residual dropped", result.detail
    assert "leaves out x" in result.detail


@pytest.mark.parametrize("check", [MLP_RESIDUAL, ATTENTION_RESIDUAL], ids=["S19", "S16"])
def test_a_residual_dropped_without_layer_scale_is_not_said_to_carry_a_gain(check):
    """`x = self.msa_block(x)` in a ViT with no LayerScale: named as the residual dropped, the sublayer output alone."""
    x, attn, mlp, _, _ = stream_and_sublayers()
    tensors = {"x": x, "attn_out": attn, "mlp_out": mlp}
    tensors["out"] = attn + (mlp if check is MLP_RESIDUAL else 0)
    result = check.run(TensorDict(tensors))
    assert result.status == "failed" and result.evidence.name == "residual dropped", result.detail
    assert "leaves out x" in result.detail and "LayerScale" not in result.evidence.message, result.evidence.message


def test_an_operand_counted_twice_is_no_layer_scale_of_gain_2():
    x, attn, mlp, _, _ = stream_and_sublayers()
    result = MLP_RESIDUAL.run(TensorDict({"x": x, "attn_out": attn, "mlp_out": mlp, "out": x + attn + 2 * mlp}))
    assert result.status == "failed" and result.evidence.name == "added twice", result.detail


def test_layer_scale_is_not_fitted_from_too_few_positions():
    """A gain per channel and operand fits any few rows: below four positions per gain, the plain sum's verdict."""
    x, attn, _, gamma1, _ = (t[:1, :3] if t.dim() == 3 else t for t in stream_and_sublayers())
    result = ATTENTION_RESIDUAL.run(TensorDict({"x": x, "attn_out": attn, "out": x + gamma1 * attn}))
    assert not result.passed


@pytest.mark.parametrize("check", [MLP_RESIDUAL, ATTENTION_RESIDUAL], ids=["S19", "S16"])
def test_the_residual_taken_from_the_normalised_stream_is_named_layer_norm_of_the_wrong_tensor(check):
    """asyml B2: `out += self.norm1(residual)`: the sublayer's normalised input added back where the stream belongs."""
    x, attn, mlp, gain, _ = stream_and_sublayers()
    normed = F.layer_norm(x, (C,)) * gain + 0.1
    tensors = {"x": x, "attn_out": attn, "mlp_out": mlp}
    tensors["out"] = normed + attn + (mlp if check is MLP_RESIDUAL else 0)
    result = check.run(TensorDict(tensors))
    assert result.status == "failed" and result.evidence.name == "LayerNorm of the wrong tensor", result.detail
    assert "adds a LayerNorm of x where x itself belongs" in result.detail


def test_a_returned_dict_with_a_none_entry_is_captured_as_its_tensors_and_the_checks_read_the_first(tmp_path):
    """DINOv2's `forward_features` returns {"x_norm_clstoken": …, "masks": None}: marked on its class-row entry, the
    step is that dict, its tensors captured (the None left out and said), the first what the checks read."""
    from transformer_trace.cli import main

    script = tmp_path / "features.py"
    script.write_text(
        "import torch\n"
        "def features(x):\n"
        "    return {\n"
        "        'cls': x[:, 0],  # trace: out\n"
        "        'patches': x[:, 1:],\n"
        "        'masks': None,\n"
        "    }\n"
        "out = features(torch.arange(24.0).reshape(2, 3, 4))\n", encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "docs"), "--name", "t", "-q"]) == 0
    data = json.loads((tmp_path / "docs" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    (step,) = [s for s in data["snapshots"] if s["captured"]]
    assert step["shape"] == [2, 4] and step["first"][:4] == [0.0, 1.0, 2.0, 3.0]
    page = (tmp_path / "docs" / "t" / step["page"]).read_text(encoding="utf-8")
    assert "1 None entry left out" in page and "which a page cannot show" not in page


def registers_joined() -> tuple[torch.Tensor, torch.Tensor]:
    """DINOv2's `torch.cat((x[:, :1], registers, x[:, 1:]), dim=1)`: (B, 1 + N, C) handed over as (B, 1 + 4 + N, C)."""
    torch.manual_seed(4)
    tokens, registers = torch.randn(B, N1, C), torch.randn(1, 4, C).expand(B, -1, -1)
    return tokens, torch.cat((tokens[:, :1], registers, tokens[:, 1:]), dim=1)


HANDED_OVER = SameTensor(out=Ref("block_input"), source=Ref("tokens_pos"), claim="is what the previous stage handed over")


def test_a_block_input_holding_extra_tokens_is_the_handed_over_tokens_with_them_joined():
    tokens, joined = registers_joined()
    result = HANDED_OVER.run(TensorDict({"tokens_pos": tokens, "block_input": joined}))
    assert result.passed and "4 extra tokens of the model's own (registers) joined at rows 1…4" in result.name


def test_a_block_input_that_changed_a_handed_over_token_is_not_taken_for_extra_tokens():
    tokens, joined = registers_joined()
    joined[:, -1] += 1.0
    assert not HANDED_OVER.run(TensorDict({"tokens_pos": tokens, "block_input": joined})).passed


def test_the_run_reads_the_steps_before_extra_tokens_joined_with_their_own_token_count():
    """S06 and S07 hold 1 + N tokens, every block step 1 + 4 + N: the join is found from the values, said once for
    the run, and the earlier steps read with N1 = 1 + N instead of misfitting the run's."""
    tokens, joined = registers_joined()
    legend = REPORTS["vit"].dims_legend
    shapes = [StepShape("S07", ("B", "N1", "C"), tuple(tokens.shape), value=tokens),
              StepShape("S08", ("B", "N1", "C"), tuple(joined.shape), value=joined),
              StepShape("S16", ("B", "N1", "C"), tuple(joined.shape), value=joined + 1),
              StepShape("S19", ("B", "N1", "C"), tuple(joined.shape), value=joined + 2)]
    run = read_run_layout(shapes, legend)
    assert run.dims["N1"] == N1 + 4 and run.extra_tokens is not None
    assert (run.extra_tokens.count, run.extra_tokens.start, run.extra_tokens.before) == (4, 1, "S07")
    assert any(row[0] == "Extra tokens" for row in run.recognised())
    assert run.dims_for(("B", "N1", "C"), tokens.shape)["N1"] == N1
    assert run.dims_for(("B", "N1", "C"), joined.shape) is run.dims


def test_a_run_without_extra_tokens_reads_every_step_with_its_one_token_count():
    tokens = torch.randn(B, N1, C)
    shapes = [StepShape(label, ("B", "N1", "C"), tuple(tokens.shape), value=tokens + i)
              for i, label in enumerate(("S07", "S08", "S16"))]
    run = read_run_layout(shapes, REPORTS["vit"].dims_legend)
    assert run.extra_tokens is None and run.dims_for(("B", "N1", "C"), tokens.shape) is run.dims


@dataclass
class WithWeights(TensorDict):
    """Captured tensors and the weights of the modules the marked lines called (as a trace binds them)."""

    modules: dict = field(default_factory=dict)

    def module(self, ref):
        return self.modules[self.name(ref)]


H, HS = 3, 4
PROJECTION = ProjectionOfHeads(out=Ref("out"), x=Ref("concat"), module=ModuleRef("proj"), heads=Ref("ctx"))


def projected(merge) -> WithWeights:
    torch.manual_seed(5)
    ctx, proj = torch.randn(B, H, N1, HS), torch.nn.Linear(H * HS, H * HS)
    concat = merge(ctx)
    with torch.no_grad():
        out = proj(concat)
    return WithWeights({"ctx": ctx, "concat": concat, "out": out}, modules={"proj": proj})


def test_the_output_projection_of_heads_merged_back_passes_and_says_so():
    result = PROJECTION.run(projected(lambda ctx: ctx.transpose(1, 2).reshape(B, N1, H * HS)))
    assert result.passed and "merged back" in result.name, result.detail


def test_heads_merged_without_moving_the_axis_back_are_named_at_the_projection():
    """DINOv2 B3: `x.contiguous().view(B, N, C)` of the (B, h, N, hs) context: the Linear alone would pass."""
    result = PROJECTION.run(projected(lambda ctx: ctx.reshape(B, N1, H * HS)))
    assert result.status == "failed" and result.evidence.name == "heads merged without moving the axis back"


def test_an_input_that_is_neither_merge_is_unrecognised_never_red():
    result = needs_evidence(PROJECTION.run(projected(lambda ctx: ctx.permute(0, 2, 3, 1).reshape(B, N1, H * HS))))
    assert result.status == "unrecognised", result.detail


def test_without_the_context_per_head_the_projection_alone_is_checked():
    tensors = projected(lambda ctx: ctx.reshape(B, N1, H * HS))
    result = PROJECTION.run(WithWeights({"concat": tensors.t(Ref("concat")), "out": tensors.t(Ref("out"))},
                                        modules={"proj": tensors.module(ModuleRef("proj"))}))
    assert result.passed


def test_a_tensordot_layer_over_the_heads_is_read_as_the_output_projection_of_them_flattened():
    """asyml's `LinearGeneral((h, hs), (C,))`: `tensordot(x, w, dims=([2, 3], [0, 1])) + b` on (B, T, h, hs)."""
    torch.manual_seed(9)
    weight, bias, heads = torch.randn(H, HS, C), torch.randn(C), torch.randn(B, N1, H, HS)
    out = torch.tensordot(heads, weight, dims=([2, 3], [0, 1])) + bias
    call = SimpleNamespace(params={"weight": weight, "bias": bias}, inputs=[heads], outputs=[out], module="out")
    found = user_projection(call)
    assert found is not None and found.weight.shape == (C, H * HS)
    assert torch.allclose(F.linear(heads.reshape(B, N1, -1), found.weight, found.bias), out, atol=1e-5)
    assert user_projection(SimpleNamespace(**{**vars(call), "outputs": [torch.relu(out)]})) is None


def test_the_heads_a_tensordot_projection_merges_are_compared_with_the_context_per_head():
    """asyml B3: the heads reshaped to (B, T, h, hs) instead of permuted, then the tensordot projection."""
    torch.manual_seed(10)
    ctx, weight = torch.randn(B, H, N1, HS), torch.randn(H, HS, C)
    proj = SimpleNamespace(weight=weight.reshape(-1, C).T, bias=None)
    for given, status in ((ctx.transpose(1, 2), "passed"), (ctx.reshape(B, N1, H, HS), "failed")):
        out = torch.tensordot(given, weight, dims=([2, 3], [0, 1]))
        result = PROJECTION.run(WithWeights({"ctx": ctx, "concat": given, "out": out}, modules={"proj": proj}))
        assert result.status == status, result.detail
    assert result.evidence.name == "heads merged without moving the axis back"


def test_a_residual_simply_dropped_is_never_taken_for_a_layer_norm_with_zero_gain():
    """BrianPulfer B3 (`out = attn`): what is left for the stream is nothing, which a LayerNorm of gain 0 also gives."""
    x, attn, _, _, _ = stream_and_sublayers()
    result = ATTENTION_RESIDUAL.run(TensorDict({"x": x, "attn_out": attn, "out": attn}))
    assert result.status == "failed" and result.evidence.name == "residual dropped", result.detail


@pytest.mark.parametrize("row", [0, N1])
def test_one_token_joined_first_or_last_is_the_class_token_not_extra_tokens(row):
    """A class token joined after the positions (S07 the patches alone): the class token's reading, not this one."""
    patches, cls = torch.randn(B, N1, C), torch.randn(B, 1, C)
    joined = torch.cat((patches[:, :row], cls, patches[:, row:]), dim=1)
    shapes = [StepShape("S07", ("B", "N1", "C"), tuple(patches.shape), value=patches),
              StepShape("S08", ("B", "N1", "C"), tuple(joined.shape), value=joined),
              StepShape("S16", ("B", "N1", "C"), tuple(joined.shape), value=joined + 1)]
    assert read_run_layout(shapes, REPORTS["vit"].dims_legend).extra_tokens is None
