"""Forms that round six's fresh GPT-style and encoder–decoder code (tests/trace_fresh/ROUND6_GPT.md) wrote and `trace`
misread: the residual operands of a step named in another order than the catalogue's (`# Snapshot #14: x,
residual_x`, the sublayer output first); attention rows of padded queries that see no key (a mask of −1e9 over whole
rows: uniform weights over every key, the future ones too); a mask given as valid lengths (d2l's `masked_softmax`:
key j is seen by query i where j < valid_len[i]); a step returned with its state (`return self.dense(X), state`); and
positions added to a lookup nobody marked (`pos_encoding(embedding(X) * sqrt(C))`), checked on the lookup derived from
the token IDs."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.checks import CausalMask, SoftmaxRows
from transformer_trace.reports.encoder_decoder.checks import SinusoidalPositions, _table_layouts
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.reading.verify import LayoutStatus, layout

POST_NORM_LAYER = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C = 2, 6, 16


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.Linear(C, C)  # stands in for the attention: #15's form does not depend on it
        self.norm1 = nn.LayerNorm(C)

    def forward(self, x):
        residual_x = x.clone()  # Snapshot #6
        x = self.attention(x)  # Snapshot #14: x, residual_x
        x = self.norm1(x + residual_x)  # Snapshot #15
        return x


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


with torch.no_grad():
    Encoder().eval()(torch.randn(B, S, C))
'''


@pytest.mark.parametrize("names", ["x, residual_x", "residual_x, x"], ids=["sublayer first", "stream first"])
def test_residual_operands_named_in_either_order_are_read_as_the_stream_and_the_sublayer_output(tmp_path, names):
    code, checks = traced(tmp_path, POST_NORM_LAYER.replace("#14: x, residual_x", f"#14: {names}"))
    assert code == 0, checks[""]
    assert checks["#15"]["passed"] is True, checks["#15"]


def test_a_residual_dropped_after_operands_named_in_another_order_is_still_named(tmp_path):
    code, checks = traced(tmp_path, POST_NORM_LAYER.replace("self.norm1(x + residual_x)", "self.norm1(x)"))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("#15"), checks[""]


B, H, T = 2, 2, 6
LENGTHS = (4, 6)  # the first item's last two positions are padding (of the queries and of the keys)


def padded_attention(causal: bool) -> TensorDict:
    """Scores and their softmax under an additive −1e9 mask that blocks, per item, the keys past its length and whole
    query rows past it (ajhalthor's create_masks): a padded query's row is uniform over every key."""
    scores = torch.randn(B, H, T, T, generator=torch.Generator().manual_seed(0))
    blocked = torch.zeros(B, 1, T, T, dtype=torch.bool)
    for item, length in enumerate(LENGTHS):
        blocked[item, :, :, length:] = True
        blocked[item, :, length:, :] = True
    if causal:
        blocked |= torch.ones(T, T, dtype=torch.bool).triu(1)
    mask = torch.zeros(B, 1, T, T).masked_fill(blocked, -1e9)
    return TensorDict({"scores": scores, "mask": mask, "probs": torch.softmax(scores + mask, dim=-1)})


def test_padded_query_rows_that_see_no_key_are_recognised_without_the_mask():
    result = SoftmaxRows(out=Ref("probs"), scores=Ref("scores")).run(padded_attention(causal=False))
    assert result.passed, result.detail
    assert "see no key" in result.detail


def test_a_causal_softmax_whose_padded_query_rows_are_uniform_sees_no_later_key():
    result = SoftmaxRows(out=Ref("probs"), scores=Ref("scores"), mask=Ref("mask"), causal=True).run(
        padded_attention(causal=True))
    assert result.passed, result.detail


def test_a_live_query_that_sees_a_later_key_beside_padded_rows_is_still_red():
    data = padded_attention(causal=True)
    probs = data.t(Ref("probs")).clone()
    probs[1, :, 0] = torch.softmax(data.t(Ref("scores"))[1, :, 0], dim=-1)  # item 1's first query sees every key
    result = SoftmaxRows(out=Ref("probs"), scores=Ref("scores"), mask=Ref("mask"), causal=True).run(
        TensorDict({"scores": data.t(Ref("scores")), "mask": data.t(Ref("mask")), "probs": probs}))
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "no query attends to a later key"


def test_valid_lengths_per_query_are_read_as_a_mask():
    """d2l's decoder: ``dec_valid_lens = torch.arange(1, T + 1).repeat(B, 1)``: query i sees the keys before i + 1."""
    found = layout(torch.arange(1, T + 1).repeat(B, 1), ("1", "1", "T", "T"), {"B": B, "T": T, "h": H}, {})
    assert found.status is LayoutStatus.LAYOUT and "valid lengths" in found.note, found.note
    assert found.canonical is not None
    assert CausalMask(out=Ref("mask")).run(TensorDict({"mask": found.canonical})).passed


def test_valid_lengths_that_let_a_query_see_the_next_key_are_a_mask_that_is_not_causal():
    found = layout(torch.arange(2, T + 2).repeat(B, 1), ("1", "1", "T", "T"), {"B": B, "T": T, "h": H},
                   {})
    assert found.canonical is not None, found.note
    result = CausalMask(out=Ref("mask")).run(TensorDict({"mask": found.canonical}))
    assert result.status == "failed" and result.evidence is not None
    assert result.evidence.name == "no query attends to a later key"


RETURNS_STATE = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, V = 2, 5, 16, 32


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_f, self.lm_head = nn.LayerNorm(C), nn.Linear(C, V, bias=False)

    def forward(self, x, state):
        x = self.ln_f(x)  # BREAKPOINT G25
        return self.lm_head(x), state  # BREAKPOINT G26


with torch.no_grad():
    Head().eval()(torch.randn(B, T, C), [None, 3])
'''


def test_a_step_returned_with_its_state_is_that_tensor_and_says_so(tmp_path):
    """d2l's decoder: ``return self.dense(X), state``: the one tensor of the returned tuple is the step's value."""
    code, checks = traced(tmp_path, RETURNS_STATE)
    assert code == 0, checks[""]
    assert checks["G26"]["passed"] is True, checks["G26"]
    page = (tmp_path / "out" / "t").rglob("*26*.md")
    assert any("item 0 of a tuple of 2, its one tensor" in p.read_text(encoding="utf-8") for p in page)


def test_a_tuple_of_two_tensors_is_not_chosen_between(tmp_path):
    code, checks = traced(tmp_path, RETURNS_STATE.replace("return self.lm_head(x), state", "return self.lm_head(x), x"))
    assert code == 0, checks[""]
    assert checks["G26"]["passed"] is None and "which a page cannot show" in checks["G26"]["detail"], checks["G26"]


def positions_added(times: int, ids: torch.Tensor, table: torch.Tensor | None = None) -> TensorDict:
    """d2l's `pos_encoding(embedding(X) * sqrt(C))` marked as #5 alone: the lookup (#4) is never captured."""
    C = 8
    embedding = torch.randn(32, C, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    table = _table_layouts(ids.shape[-1], C)["the paper's table (sin and cos interleaved)"] if table is None else table
    return TensorDict({"src_ids": ids, "src_with_pos": embedding[ids] * C ** 0.5 + times * table})


POSITIONS = SinusoidalPositions(out=Ref("src_with_pos"), before=Ref("src_embed"), ids=Ref("src_ids"))
REPEATED = torch.tensor([[5, 12, 7, 30, 3, 1, 1, 1], [9, 4, 22, 17, 8, 26, 3, 1]])  # 1 and 3 at several positions


def test_positions_added_to_an_unmarked_lookup_are_checked_on_the_lookup_derived_from_the_ids():
    result = POSITIONS.run(positions_added(1, REPEATED))
    assert result.passed, result.detail
    assert "src_embed derived from src_ids" in result.detail


def test_positions_added_twice_to_an_unmarked_lookup_are_named():
    result = POSITIONS.run(positions_added(2, REPEATED))
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "positions added twice"


@pytest.mark.parametrize("ids, table", [
    (torch.arange(16).reshape(2, 8), None),  # no ID at two positions: nothing tells a lookup from another term
    (REPEATED, torch.randn(8, 8, dtype=torch.float64)),  # learned positions: no sinusoid table leaves a lookup
], ids=["every ID once", "a learned table"])
def test_without_evidence_of_a_lookup_the_positions_step_stays_not_checkable(ids, table):
    assert POSITIONS.run(positions_added(1, ids, table)).status == "not checkable"
