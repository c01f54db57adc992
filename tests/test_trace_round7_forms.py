"""Correct code in the forms round seven's fresh GPT-style implementations brought (tests/trace_fresh/ROUND7_GPT.md),
each on small synthetic tensors: a causal mask combined with padding in a GPT (lyeoni/gpt-pytorch), a boolean mask
added to the scores times a masking value (`x += mask * -1e4`, affjljoo3581/GPT2), heads folded into the batch axis
head-major (sooftware/transformer). Each passes and says so; the bug that looks like it (a position that sees the
next) is still red, and so are weights on keys the model's own mask blocks (sooftware's mask, repeated batch-major,
lands on the wrong item's heads: a true deviation). A sum whose every operand a module the line called gave (both
lookups inside the marked G04 line) is checked with their outputs, and positions looked up twice are named; a
pre-norm layer's K projected from the block input, beside Q and V of its LayerNorm, is named (sooftware B4)."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from transformer_trace.checks import CheckResult, SoftmaxRows, SumOf
from transformer_trace.cli import main
from transformer_trace.models.legend import Legend, Quotient
from transformer_trace.reports.gpt.checks import CausalMaskBool, MaskedFillOf
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.fold_order import merged, unfolded
from transformer_trace.trace.reading.run_layout import StepShape, read_run_layout
from transformer_trace.trace.reading.summed_calls import operands_summed

B, H, T = 2, 3, 6


def _mask(padded_last: bool, diagonal: int = 1) -> torch.Tensor:
    """(B, 1, T, T) boolean, True = blocked (a (B, T, T) mask as the trace reads it): the causal rule, the second
    item's last key padded where asked."""
    blocked = torch.ones(B, 1, T, T).triu(diagonal).bool()
    if padded_last:
        blocked[1, :, :, -1] = True
    return blocked


def _source(blocked: torch.Tensor, masking: str) -> TensorDict:
    torch.manual_seed(0)
    scores = torch.randn(B, H, T, T)
    per_head = blocked
    masked = (scores + per_head.float() * -1e4 if masking == "added" else
              scores.masked_fill(per_head, -1e9 if masking == "-1e9" else float("-inf")))
    return TensorDict({"scores": scores, "masked": masked, "mask": blocked})


MASK = CausalMaskBool(masked=Ref("masked"), scores=Ref("scores"), mask=Ref("mask"))
MASKED = MaskedFillOf(out=Ref("masked"), scores=Ref("scores"), mask=Ref("mask"))


@pytest.mark.parametrize("masking", ["-inf", "-1e9", "added"])
def test_a_gpt_causal_mask_combined_with_padding_passes_and_says_the_padding(masking):
    result = MASK.run(_source(_mask(padded_last=True), masking))
    assert result.status == "passed", result.detail
    assert "padding combined with the causal rule: 0, 1 key positions blocked for every query" in result.detail


@pytest.mark.parametrize("padded_last", [False, True])
def test_a_mask_that_lets_a_position_see_the_next_is_still_red_beside_padding(padded_last):
    result = MASK.run(_source(_mask(padded_last, diagonal=2), "-inf"))
    assert result.status == "failed" and "a position sees the next" in result.detail


def test_a_boolean_mask_added_times_minus_ten_thousand_is_read_as_a_fitted_masking_value():
    source = _source(_mask(padded_last=False), "added")
    mask, masked = MASK.run(source), MASKED.run(source)
    assert mask.status == "passed" and "the scores plus -10000 where the mask blocks" in mask.detail
    # a score above 0 minus 10⁴ lies above −10⁴ and is masked all the same: every blocked entry is counted
    assert masked.status == "passed" and f"{B * H * T * (T - 1) // 2} entries are masked, exactly the blocked" in \
        masked.detail


def test_scores_moved_by_a_small_amount_are_not_read_as_masked():
    source = _source(_mask(padded_last=False), "added")
    source.tensors["masked"] = source.tensors["scores"] - 5.0 * _mask(False).float()
    assert MASKED.run(source).status != "passed"


# --- heads folded into the batch axis head-major (sooftware/transformer: `permute(2, 0, 1, 3).view(B * h, T, hs)`)

LEGEND = Legend({"B": "batch", "S": "positions", "C": "width", "h": "heads", "hs": "head size"},
                relations=(Quotient("hs", "C", "h"),))
FB, FH, FS, FHS = 2, 4, 5, 3


def _folded_steps(head_major: bool) -> list[StepShape]:
    """A (B, S, C) projection and its heads folded into the batch axis, (B·h, S, hs), in the order asked."""
    torch.manual_seed(0)
    q = torch.randn(FB, FS, FH * FHS)
    split = q.view(FB, FS, FH, FHS)
    folded = (split.permute(2, 0, 1, 3) if head_major else split.permute(0, 2, 1, 3)).reshape(FB * FH, FS, FHS)
    return [StepShape("#7", ("B", "S", "C"), tuple(q.shape), value=q),
            StepShape("#12", ("B", "h", "S", "hs"), tuple(folded.shape), value=folded)]


def test_heads_folded_head_major_are_read_so_once_for_the_run_from_the_values_and_said():
    run = read_run_layout(_folded_steps(head_major=True), LEGEND)
    assert run.folded == ("#12",) and "#12 re-joins to #7 only read head-major" in run.heads_major
    heads = next(row for row in run.recognised() if row[0] == "Heads")
    assert "head-major (h·B, …" in heads[1] and "re-joins to #7" in heads[2]
    folded = _folded_steps(head_major=True)[1].value
    assert folded is not None
    joined = merged(folded, FB, FH, head_major=True)
    assert torch.equal(joined, _folded_steps(True)[0].value)
    assert torch.equal(unfolded(folded, FB, FH).transpose(1, 2).reshape(FB, FS, -1), joined)


def test_heads_folded_batch_major_or_without_the_whole_projection_keep_the_catalogues_order():
    assert read_run_layout(_folded_steps(head_major=False), LEGEND).heads_major == ""
    assert read_run_layout(_folded_steps(head_major=True)[1:], LEGEND).heads_major == ""  # nothing to tell by


# --- the mask the model built, not applied where it blocks (a mask folded batch-major onto head-major scores)

def _weights(leak: bool) -> TensorDict:
    """Causal + padding (the first item's last key padded) scores and their softmax; ``leak``: the first item's last
    head given the second item's mask, as sooftware's batch-major mask on head-major folded scores does."""
    torch.manual_seed(0)
    blocked = _mask(padded_last=False)
    blocked[0, :, :, -1] = True
    scores = torch.randn(B, H, T, T)
    applied = blocked.expand(B, H, T, T).clone()
    if leak:
        applied[0, -1] = blocked[1, 0]
    nothing = applied.all(-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(applied & ~nothing, float("-inf")).masked_fill(nothing, 0.0), -1)
    return TensorDict({"scores": scores, "weights": weights, "mask": blocked})


SOFTMAX = SoftmaxRows(out=Ref("weights"), scores=Ref("scores"), mask=Ref("mask"), causal=True)


def test_weights_on_keys_the_captured_mask_blocks_are_red_with_where():
    result = SOFTMAX.run(_weights(leak=True))
    assert result.status == "failed"
    assert "gives 1 weights to keys your boolean, True = blocked mask (mask) blocks" in result.detail
    assert "(0, 2, 5, 5)" in result.detail and "the mask was not applied where it blocks" in result.detail


def test_weights_that_honour_the_mask_pass_and_a_padded_query_row_is_no_leak():
    assert SOFTMAX.run(_weights(leak=False)).status == "passed"


# --- a sum whose every operand a module the marked line called gave (G04: `tok(ids) + pos(ids)`, neither marked)

def _call(module: str, out: torch.Tensor, weight: torch.Tensor, depth: int = 1) -> ModuleCall:
    return ModuleCall(module=module, kind=ModuleKind.EMBEDDING, depth=depth, inputs=[], outputs=[out],
                      params={"weight": weight}, attrs={})


def _embedded(positions_twice: bool) -> tuple[list[ModuleCall], TensorDict, torch.Tensor]:
    torch.manual_seed(0)
    tok_table, pos_table = torch.randn(10, 4), torch.randn(6, 4)
    tok, pos = tok_table[torch.tensor([[1, 2, 3], [4, 5, 6]])], pos_table[:3].expand(2, 3, 4)
    calls = [_call("Embedding", tok, tok_table), _call("Embedding", pos, pos_table)]
    if positions_twice:
        calls.append(_call("Embedding", pos, pos_table))
    return calls, TensorDict({"embed": tok + pos * (2 if positions_twice else 1)}), tok + pos


SUM = SumOf(out=Ref("embed"), operands=(Ref("tok_emb"), Ref("pos_emb")))


def _bound_run(calls: list[ModuleCall], source: TensorDict) -> CheckResult:
    found = operands_summed(SUM, calls, source, source.tensors["embed"], None)
    assert found is not None
    check, tensors, note = found
    assert "taken from the outputs of the Embedding and the Embedding the line called" in note
    return check.run(source.with_tensors({**source.tensors, **tensors}))


def test_both_lookups_of_the_embedding_sum_are_taken_from_the_lines_calls_and_it_passes():
    calls, source, _ = _embedded(positions_twice=False)
    assert _bound_run(calls, source).status == "passed"


def test_positions_looked_up_twice_are_one_operand_added_twice_and_named():
    calls, source, _ = _embedded(positions_twice=True)
    result = _bound_run(calls, source)
    assert result.status == "failed" and "was added twice" in result.detail and "pos_emb" in result.detail


def test_calls_that_do_not_give_every_operand_bind_nothing():
    calls, source, _ = _embedded(positions_twice=False)
    assert operands_summed(SUM, calls[:1], source, source.tensors["embed"], None) is None
    deeper = [calls[0], dataclasses.replace(calls[1], depth=2)]  # a call inside another module's forward
    assert operands_summed(SUM, deeper, source, source.tensors["embed"], None) is None
    captured = source.with_tensors({**source.tensors, "tok_emb": calls[0].outputs[0]})
    assert operands_summed(SUM, calls, captured, source.tensors["embed"], None) is None


# --- a pre-norm layer's K projected from the block input instead of its LayerNorm (sooftware B4): the three
# projections read one tensor where the catalogue has them read the captured block input (#20)

PRE_NORM_DECODER = '''import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C = 2, 5, 16


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(C)
        self.w_q, self.w_k, self.w_v = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)

    def forward(self, x):  # Snapshot #20 x
        h = self.norm(x)
        q = self.w_q(h)  # Snapshot #21
        k = self.w_k(h)  # Snapshot #22
        v = self.w_v(h)  # Snapshot #23
        return q, k, v


with torch.no_grad():
    DecoderLayer().eval()(torch.randn(B, T, C))
'''


@pytest.mark.parametrize("keys_from, verdicts", [
    ("h", {"#21": True, "#22": True, "#23": True}),
    ("x", {"#21": True, "#22": False, "#23": True}),
])
def test_a_pre_norm_projection_that_read_another_tensor_than_the_other_two_is_named(tmp_path, keys_from, verdicts):
    script = tmp_path / "prenorm_decoder.py"
    script.write_text(PRE_NORM_DECODER.replace("k = self.w_k(h)", f"k = self.w_k({keys_from})"), encoding="utf-8")
    code = main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"])
    snapshots = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))["snapshots"]
    checks = {s["label"]: s["check"] for s in snapshots if s["label"] in verdicts}
    assert {label: check["passed"] for label, check in checks.items()} == verdicts
    assert code == (0 if keys_from == "h" else 1)
    if keys_from == "x":
        assert "computed from another tensor than #21 and #23 read" in checks["#22"]["detail"]
