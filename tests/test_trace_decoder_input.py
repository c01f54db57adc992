"""#20, the decoder's first layer input (the catalogue's `tgt_with_pos`, which no snapshot shows): where what the
previous stage handed over is not captured, the step is checked as positions added to the target lookup derived from
the target IDs (#2), as #5 is on the source side; a later layer's input (the stream) stays not checkable, and a captured
hand-over is compared as it always was. Small synthetic tensors, no upstream file."""

from __future__ import annotations

import pytest
import torch

from transformer_trace.reports.encoder_decoder.checks import HandedOverOrPositions, _table_layouts
from transformer_trace.sources import Ref, TensorDict

C = 8
TARGET_IDS = torch.tensor([[1, 14, 6, 20, 2, 0, 0, 0], [1, 9, 9, 27, 11, 5, 2, 0]])  # 0 (padding) and 9 repeat
HANDED_OVER = HandedOverOrPositions(out=Ref("decoder.layers.0.input"), source=Ref("tgt_with_pos"),
                                    claim="is what the previous stage handed over", or_layer_norm=True,
                                    ids=Ref("tgt_ids"))


def decoder_input(times: int, layout: str = "the paper's table (sin and cos interleaved)",
                  ids: torch.Tensor = TARGET_IDS) -> torch.Tensor:
    """`pos_encoding(embedding(Y) * sqrt(C))` handed to the first decoder layer: the positions ``times`` times."""
    embedding = torch.randn(32, C, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    return embedding[ids] * C ** 0.5 + times * _table_layouts(ids.shape[-1], C)[layout]


def source(step: torch.Tensor, **more: torch.Tensor) -> TensorDict:
    return TensorDict({"tgt_ids": TARGET_IDS, "decoder.layers.0.input": step, **more})


@pytest.mark.parametrize("layout", list(_table_layouts(8, C)))
def test_the_first_decoder_input_is_checked_as_positions_added_to_the_target_lookup(layout):
    result = HANDED_OVER.run(source(decoder_input(1, layout)))
    assert result.passed, result.detail
    assert "no snapshot shows tgt_with_pos" in result.detail and "derived from tgt_ids" in result.detail


def test_positions_added_twice_to_the_target_lookup_are_named_at_the_decoder_input():
    result = HANDED_OVER.run(source(decoder_input(2)))
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "positions added twice"


def test_a_later_layers_input_without_the_previous_output_stays_not_checkable():
    stream = torch.randn(2, 8, C, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    result = HANDED_OVER.run(source(stream))
    assert result.status == "not checkable" and "tgt_with_pos" in result.detail, result.detail


def test_a_captured_hand_over_is_compared_as_it_is():
    step = decoder_input(1)
    assert HANDED_OVER.run(source(step, tgt_with_pos=step)).passed
    other = HANDED_OVER.run(source(step, tgt_with_pos=step + 1))
    assert other.status == "failed", other.detail


def test_without_the_target_ids_the_first_decoder_input_stays_not_checkable():
    result = HANDED_OVER.run(TensorDict({"decoder.layers.0.input": decoder_input(1)}))
    assert result.status == "not checkable", result.detail
