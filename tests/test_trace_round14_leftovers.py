"""Correct code and planted bugs in the forms round thirteen left unread or named late (issue 40; ROUND13_GPT.md and
ROUND13_VIT.md, "What is left"), built here in scripts of our own, none from the upstream code:

- QK normalisation: each head's queries and keys normalised (a LayerNorm or an RMSNorm over the head size, weights of
  its own) after the split, read as a correct form of every catalogue's split-heads step (the GPT's G08/G09, the
  ViT's S09/S10, the encoder–decoder's #12), the scores downstream reading the normalised queries and keys;
- a library attention given keys and values from another tensor than its queries: the message says, in the script's
  names, which input each read;
- a softmax over the wrong axis meeting padded key columns (NaN under a softmax over the queries): named by its form;
- one Linear giving q, k, v and a parallel block's MLP hidden layer (3C + 4C outputs), read by its first 3C columns,
  and its LayerNorm left out, named where the run shows the model pre-norm (a final LayerNorm, sums left as they are);
- an nn.TransformerEncoder given the other layout than it reads (``batch_first``), whose fast path records no layer:
  "batch and sequence axes swapped"."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

QK_NORM_HEADER = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, H = 2, 8, 32, 4
hs = C // H


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.ln_q, self.ln_k = NORM, NORM
        for norm in (self.ln_q, self.ln_k):
            for p in norm.parameters():
                nn.init.normal_(p, 1.0, 0.3)
'''

QK_NORM_FORWARD = {
    "gpt": '''
    def forward(self, x):
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = self.ln_q(q.view(B, T, H, hs).transpose(1, 2))  # BREAKPOINT G08
        k = self.ln_k(k.view(B, T, H, hs).transpose(1, 2))  # BREAKPOINT G09
        v = v.view(B, T, H, hs).transpose(1, 2)  # BREAKPOINT G10
        att = q @ k.transpose(-2, -1) * hs ** -0.5  # BREAKPOINT G11
        att = att.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
        return F.softmax(att, dim=-1) @ v  # BREAKPOINT G15
''',
    "vit": '''
    def forward(self, x):
        q = self.ln_q(self.q_proj(x).view(B, T, H, hs).transpose(1, 2))  # BREAKPOINT S09
        k = self.ln_k(self.k_proj(x).view(B, T, H, hs).transpose(1, 2))  # BREAKPOINT S10
        v = self.v_proj(x).view(B, T, H, hs).transpose(1, 2)  # BREAKPOINT S11
        att = q @ k.transpose(-2, -1) * hs ** -0.5  # BREAKPOINT S12
        return F.softmax(att, dim=-1) @ v  # BREAKPOINT S14
''',
    "encoder_decoder": '''
    def forward(self, x):
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # Snapshot #7, #8, #9
        qh = self.ln_q(q.view(B, T, H, hs).transpose(1, 2))  # Snapshot #12
        kh = self.ln_k(k.view(B, T, H, hs).transpose(1, 2))  # Snapshot #12
        vh = v.view(B, T, H, hs).transpose(1, 2)  # Snapshot #12
        att = qh @ kh.transpose(-2, -1) * hs ** -0.5  # Snapshot #10
        return F.softmax(att, dim=-1) @ vh
''',
}

QK_NORM_RUN = '''

with torch.no_grad():
    y = Block().eval()(torch.randn(B, T, C))
'''

QK_NORMS = ["nn.LayerNorm(hs)", "nn.RMSNorm(hs)", "nn.LayerNorm(hs, elementwise_affine=False)"]
QK_STEPS = {"gpt": ("G08", "G09", "G11"), "vit": ("S09", "S10", "S12"), "encoder_decoder": ("#12", "#10")}


@pytest.mark.parametrize("norm", QK_NORMS)
@pytest.mark.parametrize("catalogue", sorted(QK_NORM_FORWARD))
def test_queries_and_keys_normalised_per_head_pass_as_the_split_heads_and_feed_the_scores(tmp_path, catalogue, norm):
    """zhangir-azerbayev/ml-monorepo's ParallelTransformerBlock (round thirteen): `q = self.ln_q(q.view(B, T, h,
    hs).transpose(1, 2))`, a LayerNorm over the head size of its own."""
    source = QK_NORM_HEADER.replace("NORM", norm) + QK_NORM_FORWARD[catalogue] + QK_NORM_RUN
    code, checks = traced(tmp_path, source)
    assert code == 0, checks[""]
    for label in QK_STEPS[catalogue]:
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
    assert "normalised over the head size" in checks[QK_STEPS[catalogue][0]]["detail"] \
        or "after a norm over the head size" in checks[QK_STEPS[catalogue][0]]["detail"]


@pytest.mark.parametrize("catalogue", ["gpt", "vit"])
def test_queries_normalised_over_the_wrong_axis_are_not_passed(tmp_path, catalogue):
    """A norm over the positions (not the head size) is no member of the family: not read as QK normalisation."""
    forward = QK_NORM_FORWARD[catalogue].replace("self.ln_q(", "F.layer_norm(").replace(
        ".transpose(1, 2))  # BREAKPOINT", ".transpose(1, 2).transpose(-1, -2), (T,)).transpose(-1, -2)  # BREAKPOINT", 1)
    source = QK_NORM_HEADER.replace("NORM", "nn.LayerNorm(hs)") + forward + QK_NORM_RUN
    code, checks = traced(tmp_path, source)
    label = QK_STEPS[catalogue][0]
    assert checks[label]["passed"] is not True, checks[label]["detail"]


LIBRARY_ATTENTION = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C = 2, 9, 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(C)
        self.attn = nn.MultiheadAttention(C, 4, batch_first=True)

    def forward(self, x):  # BREAKPOINT S08
        residual = x
        x = self.norm(x)
        x = self.attn(ARGUMENTS)[0]  # BREAKPOINT S15
        return x + residual  # BREAKPOINT S16


tokens = torch.randn(B, N, C)  # BREAKPOINT S07
with torch.no_grad():
    y = Block().eval()(tokens)
'''


def test_a_library_attention_given_keys_and_values_from_the_block_input_says_which_input_each_read(tmp_path):
    """AD6767/mnist-vit-from-scratch's B2 (round thirteen, `self.multi_head_attn(x, residual1, residual1)`): the message
    names, in the script's names, what the keys and values read and what the queries read."""
    code, checks = traced(tmp_path, LIBRARY_ATTENTION.replace("ARGUMENTS", "x, residual, residual"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("S15"), checks[""]["first_failure"]
    evidence = checks["S15"]["evidence"]
    assert evidence["name"] == "computed from another tensor"
    assert "keys and values from tokens (S07) and its queries from a LayerNorm of tokens (S07)" in \
        evidence["message"], evidence["message"]


def test_a_library_self_attention_given_one_tensor_passes(tmp_path):
    code, checks = traced(tmp_path, LIBRARY_ATTENTION.replace("ARGUMENTS", "x, x, x"))
    assert code == 0, checks[""]
    assert checks["S15"]["passed"] is True, checks["S15"]["detail"]


PADDED_KEYS = '''\
import math
import torch

torch.manual_seed(0)
B, H, L, hs = 2, 4, 7, 8
q, k = torch.randn(B, H, L, hs), torch.randn(B, H, L, hs)
blocked = torch.zeros(B, 1, 1, L, dtype=torch.bool)
blocked[1, ..., 5:] = True  # the second sentence's last two keys are padding
scores = q @ k.transpose(-2, -1) / math.sqrt(hs)  # Snapshot #10
weights = torch.softmax(scores.masked_fill(blocked, FILL), dim=AXIS)  # Snapshot #11
'''


@pytest.mark.parametrize("fill", ['float("-inf")', "torch.finfo(torch.float32).min"])
def test_a_softmax_over_the_queries_meeting_padded_key_columns_is_named_by_its_form(tmp_path, fill):
    """Alexander-Nestor-Bergmann/pytorch-transformer-demo's B2 (round thirteen, `softmax(dim=-2)` with True-is-blocked
    padding masks filled with −inf): a padded key column, masked for every query, is NaN under a softmax over the
    queries; the form is fitted on the columns that are defined, not left to the row-sum property."""
    code, checks = traced(tmp_path, PADDED_KEYS.replace("FILL", fill).replace("AXIS", "-2"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("#11"), checks[""]["first_failure"]
    assert checks["#11"]["evidence"]["name"] == "softmax over the wrong axis", checks["#11"]["evidence"]


@pytest.mark.parametrize("fill", ['float("-inf")', "torch.finfo(torch.float32).min"])
def test_a_softmax_over_the_keys_with_padded_key_columns_passes(tmp_path, fill):
    code, checks = traced(tmp_path, PADDED_KEYS.replace("FILL", fill).replace("AXIS", "-1"))
    assert code == 0, checks[""]
    assert checks["#11"]["passed"] is True, checks["#11"]["detail"]


PARALLEL_GPT = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, H, V = 2, 8, 32, 4, 40
hs = C // H


class ParallelBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(C)
        self.qkv_fc = nn.Linear(C, 3 * C + 4 * C)
        self.fc_out = nn.Linear(4 * C, C)
        self.ln_q, self.ln_k = nn.LayerNorm(hs), nn.LayerNorm(hs)  # QK normalisation: norms of the block's own

    def forward(self, x):  # BREAKPOINT G05 x
        fused = self.qkv_fc(BLOCK_INPUT)  # BREAKPOINT G07
        q, k, v, hidden = torch.split(fused, [C, C, C, 4 * C], dim=-1)
        q = self.ln_q(q.view(B, T, H, hs).transpose(1, 2))  # BREAKPOINT G08
        k = self.ln_k(k.view(B, T, H, hs).transpose(1, 2))  # BREAKPOINT G09
        v = v.view(B, T, H, hs).transpose(1, 2)  # BREAKPOINT G10
        mlp_out = self.fc_out(F.gelu(hidden))  # BREAKPOINT G22
        att = (q @ k.transpose(-2, -1) * hs ** -0.5).masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
        outs = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)  # BREAKPOINT G16
        return RETURNED  # BREAKPOINT G23


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.pos = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.Sequential(ParallelBlock(), ParallelBlock())
        self.ln_f = nn.LayerNorm(C)

    def forward(self, ids):
        x = self.embed(ids) + self.pos(torch.arange(T))  # BREAKPOINT G04
        return self.ln_f(self.blocks(x))  # BREAKPOINT G25


with torch.no_grad():
    y = Model().eval()(torch.randint(0, V, (B, T)))
'''


def _parallel(block_input: str, returned: str = "outs + mlp_out + x") -> str:
    return PARALLEL_GPT.replace("BLOCK_INPUT", block_input).replace("RETURNED", returned)


def test_one_projection_giving_q_k_v_and_the_mlp_hidden_layer_is_read_by_its_first_3c_columns(tmp_path):
    """zhangir-azerbayev/ml-monorepo's ParallelTransformerBlock (round thirteen): one Linear makes q, k, v and the MLP's
    hidden layer (3C + 4C outputs), split by `torch.split`."""
    code, checks = traced(tmp_path, _parallel("self.ln(x)"))
    assert code == 0, checks[""]
    for label in ("G07", "G08", "G09", "G10", "G22", "G23", "G25"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
    assert "the Q part of fused (G07)" in checks["G08"]["detail"], checks["G08"]["detail"]


def test_the_fused_projection_given_the_block_input_where_the_model_is_pre_norm_is_named(tmp_path):
    """zhangir-azerbayev/ml-monorepo's B6 (round thirteen, `self.qkv(inputs)`): the block's only LayerNorm left out;
    the run shows the model pre-norm by its final LayerNorm and its blocks' sums left as they are."""
    code, checks = traced(tmp_path, _parallel("x"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("G07"), checks[""]["first_failure"]
    assert checks["G07"]["evidence"]["name"] == "sublayer given the stream, not its LayerNorm"
    assert "normalises once more after its blocks (what G25's line ran)" in checks["G07"]["detail"]


def test_a_post_norm_parallel_block_with_a_final_layernorm_is_not_called_a_missing_norm(tmp_path):
    """A block that normalises its sum (post-norm) gives its projection the stream as it is, rightly: the final
    LayerNorm alone is no evidence of a pre-norm model there."""
    code, checks = traced(tmp_path, _parallel("x", "self.ln(outs + mlp_out + x)"))
    assert checks["G07"]["passed"] is True, checks["G07"]["detail"]
    assert code == 0, checks[""]


LIBRARY_ENCODER = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C = 2, 9, 16
layer = nn.TransformerEncoderLayer(C, 4, dim_feedforward=32, dropout=0.0, batch_first=BATCH_FIRST)
encoder = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(C), enable_nested_tensor=False).eval()
cls_token, positions = torch.zeros(1, 1, C), torch.randn(1, N + 1, C)
with torch.no_grad():
    patches = torch.randn(B, N, C)  # BREAKPOINT S04
    x = torch.cat([cls_token.expand(B, -1, -1), patches], dim=1)  # BREAKPOINT S06
    x = x + positions  # BREAKPOINT S07
    x = CALL  # BREAKPOINT S23
'''

ENCODER_CALLS = {"as it is": "encoder(x)", "swapped": "encoder(x.transpose(0, 1)).transpose(0, 1)"}


@pytest.mark.parametrize(("batch_first", "given", "swapped"), [
    (True, "as it is", False), (True, "swapped", True), (False, "swapped", False), (False, "as it is", True)])
def test_an_encoder_given_the_other_layout_than_it_reads_is_named_where_its_fast_path_shows_no_layer(
        tmp_path, batch_first, given, swapped):
    """DogWY/My_ViT's B5 (round twelve): the sequence handed to a batch_first nn.TransformerEncoder as (N, B, C). In
    eval mode without gradients its fast path records no layer call; the encoder's own record says how it reads."""
    source = LIBRARY_ENCODER.replace("BATCH_FIRST", str(batch_first)).replace("CALL", ENCODER_CALLS[given])
    code, checks = traced(tmp_path, source)
    if swapped:
        assert code == 1
        assert checks["S23"]["evidence"]["name"] == "batch and sequence axes swapped", checks["S23"]
        assert f"(batch_first={batch_first})" in checks["S23"]["detail"]
    else:  # (the sequence-first call's final LayerNorm, read in another layout than the step, is not judged red)
        assert code == 0, checks[""]
        assert "evidence" not in checks["S23"], checks["S23"]
