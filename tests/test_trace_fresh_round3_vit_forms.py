"""Correct forms that round three's fresh ViTs (tests/trace_fresh/ROUND3_VIT.md: jankrepl's single-file ViT, DINOv2,
asyml's port of the JAX ViT) wrote and `trace` did not know, so that a bug planted on the same step went unseen: each
now passes and says its form, and the planted bug is named with its form. Small synthetic tensors only."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from transformer_trace.checks import SumOf
from transformer_trace.checks.normalisation import ResidualThenNorm
from transformer_trace.sources import ModuleRef, Ref, TensorDict

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
