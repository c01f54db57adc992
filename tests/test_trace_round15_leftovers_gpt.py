"""The forms round fourteen's GPT-style and encoder–decoder implementations left unread (tests/trace_fresh/ROUND14_GPT.md,
"What is left"), built here in scripts of our own, none from the upstream code:

- DynamicTanh in a LayerNorm's place (``gamma * tanh(alpha * x) + beta``, a learned scalar alpha): read as a
  normalisation family with the module's own parameters (AwikDhar/GPT's G25), alpha fitted from the tensors where no
  weights are captured, and its alpha left out named (AwikDhar's B2);
- an encoder–decoder's attention output marked on an ``nn.MultiheadAttention`` call decoding one query row
  (``self_attn(tgt[-1:], tgt, tgt)``, then ``cross_attn(row, memory, memory)``): the call recomputed from its inputs
  and weights and its rows read against the layer's input and the encoder's output (alex-matton's #28 and #35, not
  checkable before), its keys taken from the query row alone (B1), the cross-attention over the decoder's own stream
  (B2) and the first row as the query (B3) named; the decoded output read as the cached rows of the earlier positions
  then the new row, and the new row put before the cache named (B4);
- learned positions in the encoder–decoder numbering (``x + self.embed_positions(pos_ids)``, BART's #5): read as its
  input plus the rows of the position table the line looked up, the same for every item, and added twice named."""

from __future__ import annotations

import torch

from tests.conftest import trace_source as traced
from transformer_trace.checks.normalisation import fitted_layer_norm

DYNAMIC_TANH = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class DynamicTanh(nn.Module):
    def __init__(self, width, init_alpha=0.5):
        super().__init__()
        self.gamma = nn.Parameter(1 + 0.1 * torch.randn(width))
        self.beta = nn.Parameter(0.1 * torch.randn(width))
        self.alpha = nn.Parameter(torch.ones(1) * init_alpha)

    def forward(self, x):
        return self.gamma * TANH + self.beta


V, C = 40, 16
tok_emb = nn.Embedding(V, C)
final_norm = DynamicTanh(C)
lm_head = nn.Linear(C, V)
ids = torch.tensor([[1, 5, 7, 2, 9, 3], [4, 4, 8, 0, 6, 1]])
with torch.no_grad():
    tok = tok_emb(ids)  # BREAKPOINT G02
    x = tok * 2
    x = final_norm(x)  # BREAKPOINT G25
    logits = lm_head(x)  # BREAKPOINT G26
'''


def test_a_dynamic_tanh_in_the_final_norms_place_passes_with_its_own_parameters(tmp_path):
    """AwikDhar/GPT's G25 (round fourteen): not checkable before (a user's module of three parameters)."""
    code, checks = traced(tmp_path, DYNAMIC_TANH.replace("TANH", "F.tanh(self.alpha * x)"))
    assert code == 0, checks[""]
    assert checks["G25"]["passed"] is True, checks["G25"]["detail"]
    assert checks["G25"]["name"].startswith("equals DynamicTanh("), checks["G25"]["name"]
    assert "alpha = 0.5" in checks["G25"]["detail"]


def test_a_dynamic_tanh_without_its_alpha_is_named(tmp_path):
    """AwikDhar/GPT's B2 (round fourteen): ``tanh(x)``, the learned alpha left out."""
    code, checks = traced(tmp_path, DYNAMIC_TANH.replace("TANH", "F.tanh(x)"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("G25"), checks[""]["first_failure"]
    assert checks["G25"]["evidence"]["name"] == "DynamicTanh without its alpha"


def test_a_dynamic_tanh_of_another_scale_is_not_passed(tmp_path):
    """Neither the family with the module's alpha nor alpha left out: a form the checks do not know, never passed."""
    _, checks = traced(tmp_path, DYNAMIC_TANH.replace("TANH", "F.tanh(3 * self.alpha * x)"))
    assert checks["G25"]["passed"] is not True, checks["G25"]["detail"]


def _stream() -> torch.Tensor:
    return torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2


def test_a_dynamic_tanh_without_weights_is_read_with_its_alpha_fitted():
    x = _stream()
    gain = 1 + 0.1 * torch.arange(16, dtype=torch.float64)
    claim, passed, detail = fitted_layer_norm(gain * torch.tanh(0.7 * x) - 0.2, x, "its input", or_dynamic_tanh=True)
    assert passed, detail
    assert claim.startswith("equals DynamicTanh("), claim
    assert "alpha fitted (0.7" in detail, detail


def test_a_tanh_is_no_evidence_that_a_tensor_is_a_norm_of_another():
    """Fitted from tensors alone a DynamicTanh fits any tanh: read only where a LayerNorm step is expected, never as
    the evidence of a bug form ("LayerNorm of the wrong tensor": a tanh after an MLP was read as a norm of its output)."""
    x = _stream()
    _, passed, _ = fitted_layer_norm(torch.tanh(x), x, "its input")
    assert not passed


def test_the_input_itself_is_not_read_as_a_dynamic_tanh_of_a_small_alpha():
    """A tiny alpha makes tanh a line: a norm left out (the step equal to its input) fits it, so it proves nothing."""
    x = _stream()
    _, passed, _ = fitted_layer_norm(x.clone(), x, "its input")
    assert not passed


ONE_ROW_DECODER = """\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
V, C, H, S, T = 20, 16, 4, 7, 5
embedding = nn.Embedding(V, C)
position = torch.arange(64, dtype=torch.float).unsqueeze(1)
frequencies = torch.exp(torch.arange(0, C, 2).float() * (-math.log(10000.0) / C))
table = torch.zeros(64, 1, C)
table[:, 0, 0::2] = torch.sin(position * frequencies)
table[:, 0, 1::2] = torch.cos(position * frequencies)
encoder_norm = nn.LayerNorm(C)
self_attn = nn.MultiheadAttention(C, H)
cross_attn = nn.MultiheadAttention(C, H)
norm1, norm2 = nn.LayerNorm(C), nn.LayerNorm(C)
for module in (self_attn, cross_attn):
    module.eval()
src_ids = torch.tensor([[4, 9, 13, 6, 17, 8, 11], [5, 12, 3, 16, 7, 10, 14]])  # Snapshot #1
tgt_ids = torch.tensor([[1, 4, 4, 9, 9], [1, 5, 5, 12, 12]])  # Snapshot #2


def decoder_layer(tgt, memory):  # Snapshot #20 tgt
    tgt_last_tok = QUERY_ROW
    tmp_tgt = self_attn(tgt_last_tok, SELF_KV, need_weights=False)[0]  # Snapshot #28
    tgt_last_tok = norm1(tgt_last_tok + tmp_tgt)  # Snapshot #29
    tmp_tgt = cross_attn(tgt_last_tok, CROSS_KV, need_weights=False)[0]  # Snapshot #35
    tgt_last_tok = norm2(tgt_last_tok + tmp_tgt)  # Snapshot #36
    return tgt_last_tok


with torch.no_grad():
    src_embed = embedding(src_ids).permute(1, 0, 2)  # Snapshot #4
    src_with_pos = src_embed + table[:S]  # Snapshot #5
    memory = encoder_norm(src_with_pos)  # Snapshot #19
    tgt_with_pos = embedding(tgt_ids).permute(1, 0, 2) + table[:T]
    out = decoder_layer(tgt_with_pos, memory)
"""


def _one_row(query="tgt[-1:, :, :]", self_kv="tgt, tgt", cross_kv="memory, memory") -> str:
    return ONE_ROW_DECODER.replace("QUERY_ROW", query).replace("SELF_KV", self_kv).replace("CROSS_KV", cross_kv)


def test_one_query_row_through_multihead_attention_calls_passes(tmp_path):
    """alex-matton/causal-transformer-decoder's layer (round fourteen): #28 and #35 not checkable before (the heads
    are inside nn.MultiheadAttention)."""
    code, checks = traced(tmp_path, _one_row())
    assert code == 0, checks[""]
    for label in ("#28", "#35"):
        assert checks[label]["passed"] is True, checks[label]["detail"]
    assert "the last row (one decoded per call)" in checks["#28"]["name"]
    assert "the keys' input is tgt (#20)" in checks["#28"]["detail"]
    assert "cross-attention over the encoder's output" in checks["#35"]["name"]


def test_keys_and_values_from_the_query_row_alone_are_named(tmp_path):
    """alex-matton's B1 (round fourteen): ``self_attn(row, row, row)``, the earlier rows never attended."""
    code, checks = traced(tmp_path, _one_row(self_kv="tgt_last_tok, tgt_last_tok"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("#28"), checks[""]["first_failure"]
    assert checks["#28"]["evidence"]["name"] == "keys from the query rows alone"


def test_a_cross_attention_over_the_decoders_own_stream_is_named(tmp_path):
    """alex-matton's B2 (round fourteen): ``cross_attn(row, tgt, tgt)``."""
    code, checks = traced(tmp_path, _one_row(cross_kv="tgt, tgt"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("#35"), checks[""]["first_failure"]
    assert checks["#35"]["evidence"]["name"] == "cross-attention over the decoder's stream"


def test_the_first_row_as_the_query_of_a_causal_decoder_is_named(tmp_path):
    """alex-matton's B3 (round fourteen): ``tgt[:1]``, a query that attends to the rows after it."""
    code, checks = traced(tmp_path, _one_row(query="tgt[:1, :, :]"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("#28"), checks[""]["first_failure"]
    assert checks["#28"]["evidence"]["name"] == "no query attends to a later key"


LEARNED_POSITIONS = """\
import torch
import torch.nn as nn

torch.manual_seed(0)
V, C, S = 20, 16, 7
embed_tokens = nn.Embedding(V, C, padding_idx=1)
embed_positions = nn.Embedding(32, C)
pos_ids = torch.arange(32)
src_ids = torch.tensor([[4, 9, 13, 6, 17, 8, 11], [5, 12, 3, 16, 7, 10, 14]])  # Snapshot #1
with torch.no_grad():
    inputs_embeds = embed_tokens(src_ids)  # Snapshot #4
    inputs_embeds = inputs_embeds * 4.0
    inputs_embeds = POSITIONS  # Snapshot #5
"""


def test_learned_positions_looked_up_on_the_line_pass(tmp_path):
    """pnthi160403/research_BART's #5 (round fourteen): unrecognised before (the numbering knew sinusoid tables)."""
    code, checks = traced(tmp_path, LEARNED_POSITIONS.replace("POSITIONS",
                                                              "inputs_embeds + embed_positions(pos_ids[:S])"))
    assert code == 0, checks[""]
    assert checks["#5"]["passed"] is True, checks["#5"]["detail"]
    assert "learned position table" in checks["#5"]["name"]


def test_learned_positions_added_twice_are_named(tmp_path):
    code, checks = traced(tmp_path, LEARNED_POSITIONS.replace("POSITIONS",
                                                              "inputs_embeds + 2 * embed_positions(pos_ids[:S])"))
    assert code == 1
    assert checks["#5"]["evidence"]["name"] == "positions added twice"


def test_rows_of_a_position_table_in_another_order_are_not_passed(tmp_path):
    _, checks = traced(tmp_path, LEARNED_POSITIONS.replace("POSITIONS",
                                                           "inputs_embeds + embed_positions(pos_ids[:S]).flip(0)"))
    assert checks["#5"]["passed"] is not True, checks["#5"]["detail"]


CACHED_ROWS = """\
import torch
import torch.nn as nn

torch.manual_seed(0)
C, T, B = 16, 5, 2
layer = nn.Linear(C, C)
tgt = torch.randn(T, B, C)  # Snapshot #20 tgt
cache = torch.randn(T - 1, B, C)
with torch.no_grad():
    new_row = layer(tgt[-1:])  # Snapshot #40 new_row
    decoded = DECODED  # Snapshot #41 decoded
"""


def test_a_decoded_output_of_the_cache_then_the_new_row_passes(tmp_path):
    """alex-matton's decoder (round fourteen): read before as 4 register tokens joined at either end."""
    code, checks = traced(tmp_path, CACHED_ROWS.replace("DECODED", "torch.cat([cache, new_row], dim=0)"))
    assert code == 0, checks[""]
    assert checks["#41"]["passed"] is True, checks["#41"]["detail"]
    assert "4 cached rows of the earlier positions" in checks["#41"]["name"]


def test_the_new_row_put_before_the_cache_is_named(tmp_path):
    """alex-matton's B4 (round fourteen): ``torch.cat([output, cache[i]])``."""
    code, checks = traced(tmp_path, CACHED_ROWS.replace("DECODED", "torch.cat([new_row, cache], dim=0)"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("#41"), checks[""]["first_failure"]
    assert checks["#41"]["evidence"]["name"] == "new rows before the cache"
