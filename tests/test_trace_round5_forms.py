"""Forms that round five's fresh encoder–decoder code (tests/trace_fresh/ROUND5_GPT.md) wrote: the q, k and v
projections made by the layer *before* the attention module is called (``mha(W_q(x), W_k(x), W_v(x), mask)``, as
brandokoch's paper implementation does), so the module's three inputs always differ. Such a call does not say
cross-attention by its inputs: keys of another length than the queries do, a causal mask among the arguments says
self-attention, and in the encoder (which has no cross-attention) the attention is its own."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.trace.child.running_module import _inputs
from transformer_trace.trace.reading.shared_lines import CROSS, DECODER_SELF, ENCODER_SELF, hit_use

B, T, S, C = 2, 5, 7, 8
X, MEMORY = torch.randn(B, T, C), torch.randn(B, S, C)
Q, K, V = torch.randn(B, T, C), torch.randn(B, T, C), torch.randn(B, T, C)
CAUSAL = torch.ones(1, T, T).tril().bool().unsqueeze(1)  # (1, 1, T, T), True = allowed
CAUSAL_BLOCKED_TRUE = ~CAUSAL  # True = masked
CAUSAL_ADDITIVE = torch.zeros(T, T).masked_fill(~torch.ones(T, T).tril().bool(), float("-inf"))
PADDED_CAUSAL = CAUSAL & torch.tensor([True] * (T - 1) + [False]).view(1, 1, 1, T)  # the last key padded
PADDING = torch.ones(B, 1, 1, T, dtype=torch.bool)


@pytest.mark.parametrize("arguments, said", [
    ((X,), "one"),
    ((X, X, X), "same"),
    ((X, X.clone(), X.clone(), PADDING), "same"),
    ((X, MEMORY, MEMORY), "differ"),                      # raw streams: the memory as keys and values
    ((Q, torch.randn(B, S, C), torch.randn(B, S, C), PADDING), "differ"),  # projected keys of the source's length
    ((Q, K, V, CAUSAL), "causal"),                        # projected before the call, a causal mask: self-attention
    ((Q, K, V, CAUSAL_BLOCKED_TRUE), "causal"),
    ((Q, K, V, CAUSAL_ADDITIVE), "causal"),
    ((Q, K, V, PADDED_CAUSAL), "causal"),
    ((Q, K, V, PADDING), "projected"),                    # a padding mask says neither
    ((Q, K, V), "projected"),
])
def test_an_attention_calls_inputs_say_self_or_cross_only_where_they_can(arguments, said):
    assert _inputs(arguments, torch) == said


ENCODER = [["", "EncoderDecoder", None], ["encoder", "TransformerEncoder", None],
           ["encoder_blocks", "ModuleList", None], ["0", "TransformerEncoderBlock", None]]
DECODER = [["", "EncoderDecoder", None], ["decoder", "TransformerDecoder", None],
           ["decoder_blocks", "ModuleList", None], ["0", "TransformerDecoderBlock", None]]


@pytest.mark.parametrize("path, use", [
    (ENCODER + [["mha_layer", "MultiHeadAttention", "projected", True]], ENCODER_SELF),
    (DECODER + [["mha_layer_1", "MultiHeadAttention", "causal", True]], DECODER_SELF),
    (DECODER + [["mha_layer_2", "MultiHeadAttention", "differ", True]], CROSS),
    (DECODER + [["mha_layer_2", "MultiHeadAttention", "projected", True]], None),  # source as long as target: not told
    (DECODER + [["cross_attn", "MultiHeadAttention", "causal", True]], None),     # name and mask at odds
])
def test_projections_made_before_the_attention_call_are_told_by_length_mask_and_stack(path, use):
    assert hit_use(path, self_uses=2).use == use


PROJECTED_OUTSIDE = '''\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
C, H = 16, 2


class ScaledDotProduct(nn.Module):
    def forward(self, q, k, v, mask):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # Snapshot #10 or #24 or #33
        scores = scores.masked_fill(mask == 0, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


class MultiHeadAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention, self.W_0 = ScaledDotProduct(), nn.Linear(C, C)

    def forward(self, q, k, v, mask):
        split = lambda t: t.view(t.size(0), t.size(1), H, C // H).transpose(1, 2)
        out = self.attention(split(q), split(k), split(v), mask)
        return self.W_0(out.transpose(1, 2).reshape(q.size(0), q.size(1), C))


class EncoderBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_q, self.W_k, self.W_v = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.mha_layer, self.norm = MultiHeadAttention(), nn.LayerNorm(C)

    def forward(self, x, mask):
        return self.norm(x + self.mha_layer(self.W_q(x), self.W_k(x), self.W_v(x), mask))


class DecoderBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_q_1, self.W_k_1, self.W_v_1 = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.W_q_2, self.W_k_2, self.W_v_2 = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.mha_layer_1, self.mha_layer_2 = MultiHeadAttention(), MultiHeadAttention()

    def forward(self, x, memory, src_mask, trg_mask):
        x = x + self.mha_layer_1(self.W_q_1(x), self.W_k_1(x), self.W_v_1(x), trg_mask)
        return x + self.mha_layer_2(self.W_q_2(x), self.W_k_2(memory), self.W_v_2(memory), src_mask)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder, self.decoder = EncoderBlock(), DecoderBlock()

    def forward(self, src, trg):
        src_mask = torch.ones(src.size(0), 1, 1, src.size(1), dtype=torch.bool)
        trg_mask = torch.ones(1, 1, trg.size(1), trg.size(1)).tril().bool()
        return self.decoder(trg, self.encoder(src, src_mask), src_mask, trg_mask)


with torch.no_grad():
    Model().eval()(torch.randn(2, 7, C), torch.randn(2, 5, C))
'''


def test_a_shared_attention_line_fed_projections_made_outside_is_split_into_its_three_uses(tmp_path):
    code, checks = traced(tmp_path, PROJECTED_OUTSIDE)
    assert code == 0, checks[""]
    assert {"#10", "#24", "#33"} <= set(checks), checks[""]
    # each use's scores are its own (the encoder's (B, h, S, S), the masked (B, h, T, T), the cross (B, h, T, S)):
    # none is read as another's shape, and none is red (their q and k are not marked: not checkable)
    assert all(checks[n]["passed"] is not False for n in ("#10", "#24", "#33")), checks
    assert not any("cannot be read" in checks[n]["detail"] for n in ("#10", "#24", "#33")), checks


PARALLEL_GPT = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H = 2, 6, 16, 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn = nn.Linear(C, C)  # the attention stands in: G19's form does not depend on it
        self.fc, self.proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):  # BREAKPOINT G05 x
        attention_output = self.attn(self.ln_1(x))  # BREAKPOINT G17
        x_normed = self.ln_2(x)  # BREAKPOINT G19
        x = attention_output + x  # BREAKPOINT G18
        return self.proj(torch.relu(self.fc(x_normed))) + x  # BREAKPOINT G23


with torch.no_grad():
    Block().eval()(torch.randn(B, T, C))
'''


def test_a_parallel_residual_block_whose_mlp_norm_reads_the_block_input_passes_and_says_so(tmp_path):
    """GPT-J's and GPT-NeoX's block (litgpt's Pythia config): the MLP's LayerNorm reads the block input, not the first
    residual sum, and the block ends in the block input plus both sublayers."""
    code, checks = traced(tmp_path, PARALLEL_GPT)
    assert code == 0, checks[""]
    assert checks["G19"]["passed"] is True and "parallel-residual" in checks["G19"]["name"], checks["G19"]


def test_the_mlp_norm_of_another_tensor_than_the_block_input_or_the_residual_sum_is_still_red(tmp_path):
    code, checks = traced(tmp_path, PARALLEL_GPT.replace("x_normed = self.ln_2(x)",
                                                         "x_normed = self.ln_2(attention_output)"))
    assert code == 1, checks[""]
    assert checks["G19"]["passed"] is False, checks["G19"]
    assert checks[""]["first_failure"].startswith("G19"), checks[""]


POST_NORM_CELLS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C = 2, 6, 16
X = torch.randn(B, T, C)  # BREAKPOINT G05
output = nn.Linear(C, C)(X)  # BREAKPOINT G17
output = output + X  # BREAKPOINT G18
output_layernorm = nn.LayerNorm(C)(output)  # BREAKPOINT G19
output = nn.Linear(C, 4 * C)(output_layernorm)  # BREAKPOINT G20
output = nn.ReLU()(output)  # BREAKPOINT G21
output = nn.Linear(4 * C, C)(output)  # BREAKPOINT G22
output = torch.dropout(output, p=0.1, train=True)
output = output + output_layernorm  # BREAKPOINT G23
output = nn.LayerNorm(C)(output)  # BREAKPOINT G24
'''


def test_a_post_norm_block_written_cell_by_cell_with_relu_and_active_dropout_passes(tmp_path):
    """waylandzhang's step-by-step notebook: modules made and called on one line, a ReLU MLP, ``torch.dropout(...,
    train=True)`` after it, the residual from the normalised stream and a LayerNorm of that sum ending the block."""
    code, checks = traced(tmp_path, POST_NORM_CELLS)
    assert code == 0, checks[""]
    assert "ReLU" in checks["G21"]["name"] and checks["G21"]["passed"] is True, checks["G21"]
    assert checks["G23"]["passed"] is True and "dropout active" in checks["G23"]["detail"], checks["G23"]
    assert checks["G24"]["passed"] is True and "post-norm" in checks["G24"]["name"], checks["G24"]


@pytest.mark.parametrize("old, new, first", [
    ("output = output + output_layernorm", "output = output + 0 * output_layernorm", "G23"),  # residual dropped
    ("output = nn.LayerNorm(C)(output)  #", "output = nn.LayerNorm(C)(output_layernorm)  #", "G24"),
])
def test_a_post_norm_block_with_active_dropout_still_names_its_bugs(tmp_path, old, new, first):
    code, checks = traced(tmp_path, POST_NORM_CELLS.replace(old, new))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith(first), checks[""]
