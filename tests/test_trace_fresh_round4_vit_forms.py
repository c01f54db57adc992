"""Correct forms that round four's fresh ViTs (tests/trace_fresh/ROUND4_VIT.md: gupta-abhay's pytorch-vit,
hila-chefer's explainability ViT, UdbhavPrasad072300's single-file package) wrote and `trace` did not know: each is now
read as the standard computation it is. Small synthetic tensors and classes only, no upstream file."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from transformer_trace.checks import ProjectionOfHeads
from transformer_trace.checks.base import needs_evidence
from transformer_trace.checks.values import PlusParameter
from transformer_trace.sources import ModuleRef, ParamRef, Ref, TensorDict
from transformer_trace.trace.child.module_calls import _torch_kind
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.run_layout import CLASS_FIRST, CLASS_LAST, RunLayout

B, N, C = 2, 4, 6
N1 = N + 1
POSITIONS = PlusParameter(out=Ref("out"), x=Ref("x"), parameter=ParamRef("pos.weight"))


class TableRead:
    """A traced run's parameters as a check reads them (trace/reading/run.py): here the one table the line read."""

    def __init__(self, table: torch.Tensor) -> None:
        self.table = table

    def parameter(self, ref: ParamRef | str) -> torch.Tensor:
        return self.table.double()


def with_table(tensors: dict[str, torch.Tensor], table: torch.Tensor) -> TensorDict:
    return TensorDict(tensors, run=TableRead(table))


def class_last_tokens_and_table() -> tuple[torch.Tensor, torch.Tensor]:
    """UdbhavPrasad's `torch.cat((x, class_token), dim=1)` then `x + self.positional_encoding`: the class token's row
    and its position row are both the last."""
    torch.manual_seed(4)
    return torch.randn(B, N1, C), torch.randn(1, N1, C)


def read_call(table: torch.Tensor) -> ModuleCall:
    return ModuleCall("positional_encoding", ModuleKind.READ, 1, [], [], {"weight": table}, {})


def test_a_position_table_read_by_a_line_of_a_class_last_run_is_read_with_the_class_row_first_as_its_steps():
    tokens, table = class_last_tokens_and_table()
    run = RunLayout(dims={"B": B, "N1": N1, "C": C}, class_token=CLASS_LAST)
    read = run.turned_call(read_call(table)).params["weight"]
    assert torch.equal(read, table.roll(1, dims=1))
    # the step and its input as the run reads them (class token first) plus the table read so: the positions added
    step, given = run.as_called(tokens + table), run.as_called(tokens)
    result = POSITIONS.run(with_table({"out": step, "x": given}, read))
    assert result.passed, result.detail


def test_the_same_table_added_twice_in_a_class_last_run_is_still_named_positions_added_twice():
    tokens, table = class_last_tokens_and_table()
    run = RunLayout(dims={"B": B, "N1": N1, "C": C}, class_token=CLASS_LAST)
    read = run.turned_call(read_call(table)).params["weight"]
    result = POSITIONS.run(with_table({"out": run.as_called(tokens + 2 * table), "x": run.as_called(tokens)}, read))
    assert result.status == "failed" and result.evidence.name == "positions added twice", result.detail


@pytest.mark.parametrize("class_token", [CLASS_FIRST, ""])
def test_a_table_is_left_in_its_own_order_where_the_class_token_is_not_last(class_token):
    _, table = class_last_tokens_and_table()
    run = RunLayout(dims={"B": B, "N1": N1, "C": C}, class_token=class_token, sequence_first=True)
    assert torch.equal(run.turned_call(read_call(table)).params["weight"], table)


def test_a_module_weight_is_never_reordered_as_a_table():
    """A Linear of N1 outputs called on the line is a module of its own, not a table the line read."""
    run = RunLayout(dims={"B": B, "N1": N1, "C": C}, class_token=CLASS_LAST)
    weight = torch.randn(N1, C)
    call = ModuleCall("head", ModuleKind.LINEAR, 1, [torch.randn(B, N1, C)], [torch.randn(B, N1, N1)],
                      {"weight": weight}, {})
    assert torch.equal(run.turned_call(call).params["weight"], weight)


class ConvWithRelevance(nn.Conv2d):
    """hila-chefer's `Conv2d(nn.Conv2d, RelProp)`: methods added, PyTorch's forward kept."""

    def relprop(self, relevance: torch.Tensor) -> torch.Tensor:
        return relevance


class LinearWithRelevance(nn.Linear):
    def relprop(self, relevance: torch.Tensor) -> torch.Tensor:
        return relevance


class ScaledConv(nn.Conv2d):
    """A subclass that changes the formula: not PyTorch's convolution."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * super().forward(x)


class OwnModule(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


@pytest.mark.parametrize(("cls", "kind"), [
    (nn.Conv2d, ModuleKind.CONV2D), (nn.Linear, ModuleKind.LINEAR), (nn.LayerNorm, ModuleKind.LAYER_NORM),
    (ConvWithRelevance, ModuleKind.CONV2D), (LinearWithRelevance, ModuleKind.LINEAR),
    (ScaledConv, None), (OwnModule, None), (nn.GELU, None),
], ids=lambda value: getattr(value, "__name__", str(value)))
def test_a_subclass_of_a_pytorch_layer_keeping_its_forward_is_recorded_as_that_layer(cls, kind):
    assert _torch_kind(cls) == kind


H, HS = 3, 2
MERGE = ProjectionOfHeads(out=Ref("out"), x=Ref("concat"), module=ModuleRef("proj"), heads=Ref("ctx"))


class WithProjection(TensorDict):
    def module(self, ref: ModuleRef | str) -> nn.Linear:
        return self.projection


def merged_in_a_class_last_run(merge) -> WithProjection:  # noqa: ANN001 - a merge of the script's own context
    """UdbhavPrasad's context kept (B, N1, h, hs) with the class token last: the run reads the context (S14) as
    (B, h, N1, hs) and every tensor with the class token first; the script merged its own order."""
    torch.manual_seed(6)
    own, proj = torch.randn(B, N1, H, HS), nn.Linear(H * HS, H * HS)
    concat = merge(own)
    with torch.no_grad():
        out = proj(concat)
    tensors = WithProjection({"ctx": own.transpose(1, 2).roll(1, dims=2), "concat": concat.roll(1, dims=1),
                              "out": out.roll(1, dims=1)})
    tensors.projection = proj
    return tensors


def test_a_class_last_context_merged_by_a_plain_reshape_is_the_heads_merged_back():
    result = MERGE.run(merged_in_a_class_last_run(lambda ctx: ctx.reshape(B, N1, H * HS)))
    assert result.passed and "merged back" in result.name, result.detail


def test_a_class_last_context_merged_after_moving_the_heads_forward_is_named_in_the_scripts_own_order():
    """UdbhavPrasad B5: `attention.transpose(1, 2).reshape(...)` of a context that was (B, N1, h, hs) already."""
    result = MERGE.run(merged_in_a_class_last_run(lambda ctx: ctx.transpose(1, 2).reshape(B, N1, H * HS)))
    assert result.status == "failed" and result.evidence.name == "heads merged without moving the axis back"
    assert "the class token last" in result.detail


def test_another_merge_of_a_class_last_context_stays_unrecognised():
    result = needs_evidence(MERGE.run(merged_in_a_class_last_run(
        lambda ctx: ctx.permute(0, 3, 1, 2).reshape(B, N1, H * HS))))
    assert result.status == "unrecognised", result.detail
