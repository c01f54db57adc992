"""Correct code in the forms round fifteen's fresh GPT-style implementations and encoder–decoders brought
(tests/trace_fresh/ROUND15_GPT.md), built here in scripts of our own, none from the upstream code:

- a SwiGLU whose hidden layer is made on the second Linear's own line (``self.W2(g * z)``, ``g = silu(WG(x))`` on an
  unmarked line): what fc2 was given is the product of two tensors its line read, of either sign, not a GELU's output
  (nanowell/Differential-Transformer-PyTorch: a false red at G22);
- keys and values split from one fused projection on one line and the queries on the next, both marked #12
  (``k, v = transform_data(...)``, ``q, = transform_data(...)``): the script's names say which is which, so the
  tensors are read as q, k, v, not in line order (RobertCsordas/transformer_generalization: false reds at #13 and
  #28, the attention read with K in V's place)."""

from __future__ import annotations

from tests.conftest import trace_source as traced

SWIGLU_ON_FC2_LINE = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, M = 2, 6, 16, 32


class SwiGLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.WG = nn.Linear(C, M)
        self.W1 = nn.Linear(C, M)
        self.W2 = nn.Linear(M, C)

    def forward(self, x):
        g = F.silu(self.WG(x))
        z = self.W1(x)  # BREAKPOINT G20
        return self.W2(HIDDEN)  # BREAKPOINT G22


norm = nn.LayerNorm(C)
ff = SwiGLU()
x = torch.randn(B, T, C)
with torch.no_grad():
    h = norm(x)  # BREAKPOINT G19
    out = ff(h)
'''


def test_fc2_given_a_gated_product_made_on_its_own_line_is_not_read_as_a_gelu_output(tmp_path):
    """nanowell's SwiGLU (round fifteen): ``self.W2(g * z)``, the hidden layer negative where GELU's is not."""
    code, checks = traced(tmp_path, SWIGLU_ON_FC2_LINE.replace("HIDDEN", "g * z"))
    assert code == 0, checks[""]
    assert checks["G22"]["passed"] is True, checks["G22"]["detail"]


def test_fc2_given_a_plain_tensor_outside_gelus_range_still_fails(tmp_path):
    """The claim still holds where fc2 was given one tensor (no product of two the line read): the up projection
    itself, the activation left out."""
    code, checks = traced(tmp_path, SWIGLU_ON_FC2_LINE.replace("HIDDEN", "z"))
    assert code == 1
    assert checks["G22"]["passed"] is False
    assert "GELU's minimum" in checks["G22"]["detail"]


FUSED_KV_LINE = '''\
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C, H = 2, 5, 16, 4
hs = C // H
to_kv = nn.Linear(C, 2 * C, bias=False)
to_q = nn.Linear(C, C, bias=False)
emb = nn.Embedding(10, C)


def split(x, proj, n):
    return proj(x).view(B, S, H, n, hs).permute(0, 2, 1, 3, 4).reshape(B * H, S, n, hs).unbind(dim=2)


x = emb(torch.randint(0, 10, (B, S)))  # Snapshot #4
with torch.no_grad():
    k, v = split(x, to_kv, 2)  # Snapshot #12
    q, = split(x, to_q, 1)  # Snapshot #12
    probs = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(hs), -1)  # Snapshot #11
    ctx = torch.bmm(probs, v).view(B, H, S, hs).permute(0, 2, 1, 3).reshape(B, S, C)  # Snapshot #13
'''


def test_q_k_v_marked_on_two_lines_are_read_by_their_names(tmp_path):
    """RobertCsordas' MultiHeadAttention (round fifteen): ``k, v`` on one line, ``q`` on the next, all #12."""
    code, checks = traced(tmp_path, FUSED_KV_LINE)
    assert code == 0, checks[""]
    assert checks["#11"]["passed"] is True, checks["#11"]["detail"]


def test_names_that_name_no_catalogue_variable_keep_the_line_order(tmp_path):
    """``a, b`` and ``c`` name none of q_heads, k_heads, v_heads: read in line order, as before (q = a is K here)."""
    source = FUSED_KV_LINE.replace("k, v = split", "a, b = split").replace("q, = split", "c, = split")
    source = source.replace("torch.bmm(q, k.transpose", "torch.bmm(c, a.transpose").replace("bmm(probs, v)",
                                                                                            "bmm(probs, b)")
    code, checks = traced(tmp_path, source)
    assert checks["#11"]["passed"] is not True


DIFFERENTIAL_MAP = '''\
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H = 2, 6, 32, 4
d = C // H  # each map's width; q and k are 2·d per head
W_q = nn.Linear(C, 2 * C, bias=False)
W_k = nn.Linear(C, 2 * C, bias=False)
x = torch.randn(B, T, C)
with torch.no_grad():
    Q = W_q(x).view(B, T, H, 2 * d).transpose(1, 2)  # BREAKPOINT G08
    K = W_k(x).view(B, T, H, 2 * d).transpose(1, 2)  # BREAKPOINT G09
    Q1, Q2 = Q.chunk(2, dim=-1)
    K1, K2 = K.chunk(2, dim=-1)
    scaling = SCALE
    A1 = torch.matmul(Q1, K1.transpose(-2, -1)) * scaling  # BREAKPOINT G11
'''


def test_one_map_of_a_differential_attention_is_read_from_half_of_each_heads_q_and_k(tmp_path):
    """nanowell's MultiHeadDifferentialAttention (round fifteen): ``A1 = Q1·K1ᵀ/√d``, Q1 the first half of Q's 2·d
    channels per head."""
    code, checks = traced(tmp_path, DIFFERENTIAL_MAP.replace("SCALE", "1 / math.sqrt(d)"))
    assert code == 0, checks[""]
    assert checks["G11"]["passed"] is True, checks["G11"]["detail"]
    assert "the first half of each head's q and k" in checks["G11"]["detail"]


def test_one_map_of_a_differential_attention_without_its_scale_is_named(tmp_path):
    """nanowell's B5 (round fifteen): ``scaling = 1``, named with the map's own width."""
    code, checks = traced(tmp_path, DIFFERENTIAL_MAP.replace("SCALE", "1"))
    assert code == 1
    assert checks["G11"]["evidence"]["name"] == "1/√d missing", checks["G11"]["detail"]
    assert "1/√8" in checks["G11"]["detail"]


SOFTMAX_OF_SCALED_LOGITS = '''\
import math

import torch

torch.manual_seed(0)
B, H, S, hs = 2, 4, 7, 8
x = torch.randn(B, S, H * hs)
q_heads = 4 * torch.randn(B, H, S, hs)  # Snapshot #12
k_heads = 4 * torch.randn(B, H, S, hs)  # Snapshot #12
v_heads = torch.randn(B, H, S, hs)  # Snapshot #12
padded = torch.tensor([[False] * 7, [False] * 5 + [True] * 2])
logits = q_heads @ k_heads.transpose(-2, -1)
scale = SCALE
probs = torch.softmax((logits * scale).masked_fill(padded[:, None, None, :], float("-inf")), -1)  # Snapshot #11
'''


def test_probabilities_of_unscaled_logits_are_named_where_weights_near_zero_spoil_the_fitted_factor(tmp_path):
    """RobertCsordas' B5 (round fifteen): ``softmax(logits * self.scale)`` with the scale 1, the scores not marked
    (derived from #12 as Q·Kᵀ/√hs): the weights are the softmax of the derived scores × √hs, which the factor fitted
    from the log-weights of entries near 0 misses."""
    code, checks = traced(tmp_path, SOFTMAX_OF_SCALED_LOGITS.replace("SCALE", "1.0"))
    assert code == 1
    assert checks["#11"]["evidence"]["name"] == "1/√d missing", checks["#11"]["detail"]


def test_probabilities_of_scaled_logits_pass(tmp_path):
    code, checks = traced(tmp_path, SOFTMAX_OF_SCALED_LOGITS.replace("SCALE", "1 / math.sqrt(hs)"))
    assert code == 0, checks[""]
    assert checks["#11"]["passed"] is True, checks["#11"]["detail"]


DIFFERENCE_OF_MAPS = '''\
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
B, T, H, d = 2, 6, 4, 8
Q = torch.randn(B, H, T, 2 * d)  # BREAKPOINT G08
K = torch.randn(B, H, T, 2 * d)  # BREAKPOINT G09
V = torch.randn(B, H, T, 2 * d)  # BREAKPOINT G10
lam = torch.tensor([0.3, 0.5, -0.2, 0.8]).view(1, H, 1, 1)
Q1, Q2 = Q.chunk(2, dim=-1)
K1, K2 = K.chunk(2, dim=-1)
mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
A1 = Q1 @ K1.transpose(-2, -1) / math.sqrt(d) + mask
A2 = Q2 @ K2.transpose(-2, -1) / math.sqrt(d) + MASK2
attention1 = F.softmax(A1, dim=-1)  # BREAKPOINT G14
attention2 = F.softmax(A2, dim=-1)
attention = attention1 - lam * attention2
O = torch.matmul(attention, V)  # BREAKPOINT G15
'''


def test_a_differential_attentions_context_is_read_from_the_maps_difference_its_line_read(tmp_path):
    """nanowell's differential attention (round fifteen): G14 on the first map, G15 ``attention @ V`` with
    ``attention = attention1 − λ·attention2``: a context its probs·V check did not know."""
    code, checks = traced(tmp_path, DIFFERENCE_OF_MAPS.replace("MASK2", "mask"))
    assert code == 0, checks[""]
    assert checks["G15"]["passed"] is True, checks["G15"]["detail"]
    assert "differential attention" in checks["G15"]["name"]


def test_a_second_map_left_unmasked_is_named_as_a_causal_leak_at_the_context(tmp_path):
    """nanowell's B4 (round fifteen): the second map's mask left off; the difference gives later keys weight."""
    code, checks = traced(tmp_path, DIFFERENCE_OF_MAPS.replace("MASK2", "0"))
    assert code == 1
    assert checks["G15"]["evidence"]["name"] == "no query attends to a later key", checks["G15"]["detail"]
