"""Correct code in the forms round seven's fresh GPT-style implementations brought (tests/trace_fresh/ROUND7_GPT.md),
each on small synthetic tensors: a causal mask combined with padding in a GPT (lyeoni/gpt-pytorch), a boolean mask
added to the scores times a masking value (`x += mask * -1e4`, affjljoo3581/GPT2). Each passes and says so; the bug
that looks like it (a position that sees the next) is still red."""

from __future__ import annotations

import pytest
import torch

from transformer_trace.reports.gpt.checks import CausalMaskBool, MaskedFillOf
from transformer_trace.sources import Ref, TensorDict

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
