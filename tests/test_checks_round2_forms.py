"""Correct forms that round two's fresh implementations (tests/trace_fresh/ROUND2_GPT.md) wrote and the checks did not
know (unrecognised before): each passes and says the form with its fitted parameter, and the bug that looks like it is
still named."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_trace.checks import SameTensor
from transformer_trace.reports.encoder_decoder.catalogue import SNAPSHOTS as ENCODER_DECODER
from transformer_trace.reports.encoder_decoder.checks import SinusoidalPositions
from transformer_trace.sources import Ref, TensorDict

B, L, C = 2, 7, 16
POSITIONS = SinusoidalPositions(out=Ref("out"), before=Ref("before"))


def paper_table() -> torch.Tensor:
    """The paper's table as the annotated transformer builds it: sin on even features, cos on odd ones."""
    position, div = torch.arange(L)[:, None].float(), torch.exp(torch.arange(0, C, 2) * -(math.log(10000.0) / C))
    table = torch.zeros(L, C)
    table[:, 0::2], table[:, 1::2] = torch.sin(position * div), torch.cos(position * div)
    return table


def tensor2tensor_table() -> torch.Tensor:
    """tunz/transformer-pytorch's `get_position_encoding`: every frequency's sines, then their cosines."""
    increment = math.log(10000.0) / (C // 2 - 1)
    scaled = torch.arange(L)[:, None].float() * torch.exp(torch.arange(C // 2).float() * -increment)[None]
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1)


def embedded(table: torch.Tensor, scale: float, padded: bool = False, times: int = 1) -> TensorDict:
    """The lookup (``before``, as captured before anything in place) and the step: the lookup times ``scale`` (its
    last row of item 1 zeroed first where ``padded``, as a padding token's) plus ``times`` the table."""
    torch.manual_seed(0)
    before = torch.randn(B, L, C)
    lookup = before.clone()
    if padded:
        lookup[1, -1] = 0
    return TensorDict({"before": before, "out": lookup * scale + times * table})


@pytest.mark.parametrize("table, layout", [(paper_table, "the paper's table"), (tensor2tensor_table, "sin half, then cos half")])
@pytest.mark.parametrize("scale, said", [(1.0, None), (math.sqrt(C), "scaled by 4 on the way (√16)")])
@pytest.mark.parametrize("padded", [False, True])
def test_positions_pass_in_either_sinusoid_layout_with_the_embeddings_own_factor_and_say_which(table, layout, scale,
                                                                                                 said, padded):
    result = POSITIONS.run(embedded(table(), scale, padded))
    assert result.passed, result.detail
    assert layout in result.detail and (said is None or said in result.detail)
    assert ("1 padding row zeroed" in result.detail) == padded


@pytest.mark.parametrize("table", [paper_table, tensor2tensor_table])
@pytest.mark.parametrize("scale", [1.0, math.sqrt(C)])
def test_positions_added_twice_are_named_in_either_layout_and_with_either_factor(table, scale):
    result = POSITIONS.run(embedded(table(), scale, times=2))
    assert result.status == "failed" and result.evidence is not None
    assert result.evidence.name == "positions added twice", result.detail


def test_positions_without_the_embedding_or_with_another_table_are_no_correct_form():
    table = tensor2tensor_table()
    only_table = TensorDict({"before": torch.randn(B, L, C), "out": table.expand(B, L, C).clone()})
    assert not POSITIONS.run(only_table).passed
    shuffled = embedded(table[torch.randperm(L, generator=torch.Generator().manual_seed(1))], 1.0)
    assert not POSITIONS.run(shuffled).passed


PRE_NORM_INPUT = SameTensor(out=Ref("ff_in"), source=Ref("residual"), claim="is the LayerNorm output of #15",
                            or_pre_norm_input=True)


def test_a_pre_norm_feed_forward_input_is_a_layer_norm_of_the_residual_sum_and_says_pre_norm():
    torch.manual_seed(0)
    residual = torch.randn(B, L, C)
    normed = F.layer_norm(residual, (C,), torch.rand(C) + 0.5, torch.randn(C), eps=1e-6)
    result = PRE_NORM_INPUT.run(TensorDict({"ff_in": normed, "residual": residual}))
    assert result.passed and "a pre-norm layer" in result.name, result.detail
    post_norm = PRE_NORM_INPUT.run(TensorDict({"ff_in": residual, "residual": residual}))
    assert post_norm.passed and post_norm.name == "is the LayerNorm output of #15"
    unrelated = PRE_NORM_INPUT.run(TensorDict({"ff_in": torch.randn(B, L, C), "residual": residual}))
    assert not unrelated.passed


@pytest.mark.parametrize("number", [16, 37])
def test_the_encoder_decoder_feed_forward_inputs_accept_the_pre_norm_form(number):
    snapshot = next(s for s in ENCODER_DECODER if s.number == number)
    assert [check.or_pre_norm_input for check in snapshot.checks] == [True]


@pytest.mark.parametrize("dims", [{"B": 2, "T": 6, "h": 4}, {"B": 6, "T": 2, "h": 4}])  # bound right, or B, T swapped
def test_a_sequence_first_mask_for_einsum_scores_is_read_with_its_query_and_key_axes_moved_back(dims):
    from transformer_trace.trace.reading.verify import LayoutStatus, layout

    allowed = torch.ones(6, 6, dtype=torch.bool).tril()
    read = layout(allowed[:, :, None, None], ("1", "1", "T", "T"), dims, {})
    # (with T bound right, the axes-in-another-order reading gives the same tensor first)
    assert read.status is LayoutStatus.LAYOUT and ("sequence-first (6, 6, 1, 1) mask" in read.note or dims["T"] == 6)
    assert torch.equal(read.canonical, allowed[None, None])


def test_a_gelu_written_as_its_tanh_approximation_or_a_relu_passes_and_says_so_and_no_activation_does_not():
    from transformer_trace.checks import GeluOfLinear
    from transformer_trace.sources import ModuleRef

    torch.manual_seed(0)
    fc = torch.nn.Linear(C, 4 * C)
    x = torch.randn(B, L, C)

    def gelu_tanh(t: torch.Tensor) -> torch.Tensor:  # graykode/gpt-2-Pytorch's `gelu`, minGPT's NewGELU
        return 0.5 * t * (1 + torch.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * torch.pow(t, 3))))

    class WithFc1(TensorDict):  # the trace's source: the module the marked line called, with its weights
        def module(self, ref):
            return fc

    check = GeluOfLinear(out=Ref("hidden"), x=Ref("x"), module=ModuleRef("fc1"))
    with torch.no_grad():
        approximated = check.run(WithFc1({"x": x, "hidden": gelu_tanh(fc(x))}))
        relu = check.run(WithFc1({"x": x, "hidden": torch.relu(fc(x))}))
        linear = check.run(WithFc1({"x": x, "hidden": fc(x)}))
    assert approximated.passed and "tanh approximation" in approximated.name, approximated.detail
    # the activation is a family (round five's notebook: the paper's ReLU FFN), said by name; no activation is none
    assert relu.passed and "ReLU" in relu.name, relu.detail
    assert not linear.passed
