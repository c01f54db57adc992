"""Correct forms that round three's fresh GPT-style and encoder–decoder implementations
(tests/trace_fresh/ROUND3_GPT.md) wrote and the checks did not know: each passes and says the form with its fitted
parameters, and the bug that looks like it is still named."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_trace.reports.encoder_decoder.checks import SinusoidalPositions
from transformer_trace.sources import Ref, TensorDict

B, L, C = 2, 8, 16
POSITIONS = SinusoidalPositions(out=Ref("out"), before=Ref("before"))


def own_frequency_table() -> torch.Tensor:
    """devjwsong/transformer-translator-pytorch's table: sin on even features, cos on odd ones, but the exponent reads
    the feature index itself, pos / 10000^(2·i/C), not its pair's."""
    table = torch.zeros(L, C)
    for pos in range(L):
        for i in range(C):
            angle = pos / (10000 ** (2 * i / C))
            table[pos, i] = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    return table


def embedded(table: torch.Tensor, scale: float, times: int = 1) -> TensorDict:
    torch.manual_seed(0)
    before = torch.randn(B, L, C)
    return TensorDict({"before": before, "out": before * scale + times * table})


@pytest.mark.parametrize("scale", [1.0, math.sqrt(C)])
def test_a_sinusoid_table_of_its_own_frequencies_passes_and_says_it_is_not_the_standard_one(scale):
    result = POSITIONS.run(embedded(own_frequency_table(), scale))
    assert result.passed, result.detail
    assert "frequencies of its own" in result.detail and "the paper's table" in result.detail
    own_words = result.detail.split("(not the standard tables")[0]
    assert (scale == 1.0) == ("scaled by" not in own_words)


@pytest.mark.parametrize("scale", [1.0, math.sqrt(C)])
def test_twice_a_table_of_its_own_frequencies_is_named_positions_added_twice(scale):
    result = POSITIONS.run(embedded(own_frequency_table(), scale, times=2))
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "positions added twice" and "amplitude 2" in result.detail


def test_a_position_term_that_differs_between_items_or_is_no_sinusoid_is_not_a_table_of_its_own():
    table = own_frequency_table()
    varying = embedded(table, 1.0)
    varying.tensors["out"][1] += 0.5 * torch.randn(L, C, generator=torch.Generator().manual_seed(2))
    assert not POSITIONS.run(varying).passed
    learned = embedded(torch.randn(L, C, generator=torch.Generator().manual_seed(3)), 1.0)
    assert not POSITIONS.run(learned).passed
    only_table = TensorDict({"before": torch.randn(B, L, C), "out": table.expand(B, L, C).clone()})
    assert not POSITIONS.run(only_table).passed
