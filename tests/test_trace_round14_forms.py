"""Correct code in the forms round fourteen's fresh GPT-style implementations and encoder–decoders brought
(tests/trace_fresh/ROUND14_GPT.md), built here in scripts of our own, none from the upstream code:

- a gated MLP whose two factors are the halves of one projection split on an earlier line
  (``x1, x2 = up_proj(x).split(M)``, then ``silu(x1) * x2`` on the marked line): the GPT's G21 read as an activation
  of one factor the line read times the other, and a gate multiplied by its own half (``silu(x1) * x1``, the up half
  never read) named;
- logits of the last position only, its positions axis kept (``out[:, [-1], :]`` before the head, (B, 1, V)): the
  head's vocabulary bound from that shape and the step checked on the last position's row."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

SPLIT_SWIGLU = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, M = 2, 6, 16, 24
up_proj = nn.Linear(C, 2 * M, bias=False)
down_proj = nn.Linear(M, C, bias=False)
x = torch.randn(B, T, C)
with torch.no_grad():
    x1, x2 = up_proj(x).split(M, dim=-1)  # BREAKPOINT G20
    hidden = HIDDEN  # BREAKPOINT G21
    out = down_proj(hidden)  # BREAKPOINT G22
'''


@pytest.mark.parametrize("hidden, activation", [("F.silu(x1) * x2", "SiLU"), ("x2 * F.gelu(x1)", "GELU")])
def test_a_gated_hidden_layer_of_two_split_halves_passes(tmp_path, hidden, activation):
    """AwikDhar/GPT's FeedForward (round fourteen): one up-projection split into the SwiGLU's two halves."""
    code, checks = traced(tmp_path, SPLIT_SWIGLU.replace("HIDDEN", hidden))
    assert code == 0, checks[""]
    assert checks["G21"]["passed"] is True, checks["G21"]["detail"]
    assert f"equals {activation}(x1" in checks["G21"]["name"], checks["G21"]["name"]


def test_a_gate_multiplied_by_its_own_half_is_named(tmp_path):
    """AwikDhar/GPT's B3 (round fourteen): ``silu(x1) * x1``, the up half never read."""
    code, checks = traced(tmp_path, SPLIT_SWIGLU.replace("HIDDEN", "F.silu(x1) * x1"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("G21"), checks[""]["first_failure"]
    assert checks["G21"]["evidence"]["name"] == "the gate times itself"
    assert "the up factor is never read" in checks["G21"]["detail"]


LAST_POSITION_HEAD = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
V, C = 40, 16
tok_emb = nn.Embedding(V, C)
final_norm = nn.LayerNorm(C)
lm_head = nn.Linear(C, V)
ids = torch.tensor([[1, 5, 7, 2, 9, 3], [4, 4, 8, 0, 6, 1]])
with torch.no_grad():
    tok = tok_emb(ids)  # BREAKPOINT G02
    x = final_norm(tok)  # BREAKPOINT G25
    x = x[:, [-1], :]
    logits = HEAD  # BREAKPOINT G26
'''


def test_logits_of_the_last_position_with_its_axis_kept_are_checked_on_that_row(tmp_path):
    """AwikDhar/GPT's head (round fourteen): ``out[:, [-1], :]`` before an untied head, logits (B, 1, V)."""
    code, checks = traced(tmp_path, LAST_POSITION_HEAD.replace("HEAD", "lm_head(x)"))
    assert code == 0, checks[""]
    assert checks["G26"]["passed"] is True, checks["G26"]["detail"]


def test_logits_of_the_last_position_that_are_not_the_head_of_it_are_not_passed(tmp_path):
    _, checks = traced(tmp_path, LAST_POSITION_HEAD.replace("HEAD", "lm_head(x) * 2"))
    assert checks["G26"]["passed"] is not True, checks["G26"]["detail"]


SEQUENCE_FIRST_STREAM = '''\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
V, C, S = 20, 16, 7
embedding = nn.Embedding(V, C)
position = torch.arange(64, dtype=torch.float).unsqueeze(1)
frequencies = torch.exp(torch.arange(0, C, 2).float() * (-math.log(10000.0) / C))
table = torch.zeros(64, 1, C)
table[:, 0, 0::2] = torch.sin(position * frequencies)
table[:, 0, 1::2] = torch.cos(position * frequencies)
src_ids = torch.tensor([[4, 9, 13, 6, 17, 8, 11], [5, 12, 3, 16, 7, 10, 14]])  # Snapshot #1
with torch.no_grad():
    src_embed = embedding(src_ids).permute(1, 0, 2)  # Snapshot #4
    src_with_pos = src_embed + table[:S]  # Snapshot #5
'''


def test_token_ids_batch_first_in_a_sequence_first_run_are_read_as_given(tmp_path):
    """alex-matton/causal-transformer-decoder's driver (round fourteen): the IDs (B, S), the stream (S, B, C) from the
    lookup's permute on."""
    code, checks = traced(tmp_path, SEQUENCE_FIRST_STREAM)
    assert code == 0, checks[""]
    assert checks["#1"]["passed"] is True, checks["#1"]["detail"]
    assert checks["#4"]["passed"] is True, checks["#4"]["detail"]
    assert checks["#5"]["passed"] is True, checks["#5"]["detail"]


PROJECTIONS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C = 2, 7, 16
W_q, W_k, W_v = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
x = torch.randn(B, S, C)
with torch.no_grad():
    q = W_q(x)  # Snapshot #7
    k = W_k(x)  # Snapshot #8
    v = VALUES  # Snapshot #9
'''


def test_values_projected_by_the_key_linear_are_named_at_the_values(tmp_path):
    """pnthi160403/research_BART's B3 (round fourteen): the cross-attention's V made by `k_proj`, the projection step
    recomputing the Linear its line called whichever it was."""
    code, checks = traced(tmp_path, PROJECTIONS.replace("VALUES", "W_k(x)"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("#9"), checks[""]["first_failure"]
    assert checks["#9"]["evidence"]["name"] == "computed from another tensor"


def test_three_projections_of_their_own_pass(tmp_path):
    code, checks = traced(tmp_path, PROJECTIONS.replace("VALUES", "W_v(x)"))
    assert code == 0, checks[""]
    assert all(checks[label]["passed"] is True for label in ("#7", "#8", "#9"))


SWISH = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C = 2, 6, 16
up_proj = nn.Linear(C, 4 * C)
down_proj = nn.Linear(4 * C, C)
x = torch.randn(B, T, C)
with torch.no_grad():
    h = up_proj(x)  # BREAKPOINT G20
    hidden = h * torch.sigmoid(h)  # BREAKPOINT G21
    out = down_proj(hidden)  # BREAKPOINT G22
'''


def test_swish_written_as_its_input_times_its_sigmoid_is_not_read_as_a_gate_times_itself(tmp_path):
    """affjljoo3581/GPT2's Swish (round seven): ``x * sigmoid(x)`` is SiLU, one activation of what the line read, not
    a gated layer whose up factor was never read (the reading the split-halves form gave it before this test)."""
    code, checks = traced(tmp_path, SWISH)
    assert code == 0, checks[""]
    assert checks["G21"]["passed"] is not False, checks["G21"]["detail"]
