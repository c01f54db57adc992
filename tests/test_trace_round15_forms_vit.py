"""Round fifteen's fresh ViTs (tests/trace_fresh/ROUND15_VIT.md): the forms behind what `trace` got wrong or left
unread on their first result, each held by a tiny script of our own (no upstream file).

- attention whose keys and values come from a reduced sequence of the same image (PVTv2's spatial-reduction
  attention: the tokens put back on their grid, a strided convolution and a LayerNorm before a fused `kv` Linear; CvT's
  convolutional projections with a key/value stride): the keys, the values, the scores and the probabilities have
  fewer key positions than the N1 queries, and their steps were unrecognised ("the shape cannot be read"), a planted
  1/√d or a softmax over the queries unseen. They are read as they are: the checks' formulas hold for any number of
  keys. Keys and values stacked by a fused key/value projection, `k, v = kv[0], kv[1]` with `kv` (2, B, h, M, hs),
  are read as its two parts. The attention explorer leaves out a tensor whose axis its labels cannot name.
"""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

# a pre-norm block with PVT's spatial-reduction attention: 16 queries, 4 keys and values from a 2 x 2 convolution of
# stride 2 over the 4 x 4 token grid and a LayerNorm, one fused kv Linear stacked (2, B, h, M, hs)
REDUCED = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, G, C, H = 2, 4, 16, 2
N = G * G


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(C, C)
        self.kv = nn.Linear(C, 2 * C)
        self.sr = nn.Conv2d(C, C, kernel_size=2, stride=2)
        self.norm = nn.LayerNorm(C)
        self.proj = nn.Linear(C, C)
        self.scale = (C // H) ** -0.5

    def forward(self, x):
        q = self.q(x).reshape(B, N, H, C // H).permute(0, 2, 1, 3)  # BREAKPOINT S09
        x_ = x.permute(0, 2, 1).reshape(B, C, G, G)
        x_ = self.norm(self.sr(x_).reshape(B, C, -1).permute(0, 2, 1))
        kv = self.kv(x_).reshape(B, -1, 2, H, C // H).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]  # BREAKPOINT S10, S11
        attn = (q @ k.transpose(-2, -1)) * self.scale  # BREAKPOINT S12
        attn = attn.softmax(dim=-1)  # BREAKPOINT S13
        ctx = attn @ v  # BREAKPOINT S14
        return self.proj(ctx.transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S15


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(C)
        self.attn = Attention()
        self.norm2 = nn.LayerNorm(C)
        self.mlp = nn.Sequential(nn.Linear(C, 2 * C), nn.GELU(), nn.Linear(2 * C, C))

    def forward(self, x):  # BREAKPOINT S08
        x = x + self.attn(self.norm1(x))  # BREAKPOINT S16
        x = x + self.mlp(self.norm2(x))  # BREAKPOINT S19
        return x  # BREAKPOINT S20


with torch.no_grad():
    out = nn.Sequential(Block(), Block()).eval()(torch.randn(B, N, C))
'''

ATTENTION_STEPS = ("S10", "S11", "S12", "S13", "S14")


def test_keys_and_values_of_a_reduced_sequence_are_read_as_they_are(tmp_path):
    code, checks = traced(tmp_path, REDUCED)
    assert code == 0, checks[""]
    for label in ATTENTION_STEPS:
        assert checks[label]["passed"] is True, (label, checks[label])


@pytest.mark.parametrize(("bug", "label", "form"), [
    ("attn = (q @ k.transpose(-2, -1))  # BREAKPOINT S12", "S12", "1/√d missing"),
    ("attn = attn.softmax(dim=-2)  # BREAKPOINT S13", "S13", "softmax over the wrong axis"),
])
def test_a_bug_in_attention_over_reduced_keys_is_named_at_its_step(tmp_path, bug, label, form):
    line = next(line for line in REDUCED.splitlines() if line.strip().endswith(f"# BREAKPOINT {label}"))
    code, checks = traced(tmp_path, REDUCED.replace(line.strip(), bug))
    assert code == 1 and checks[""]["first_failure"].startswith(label), checks[""]
    assert checks[label]["evidence"]["name"] == form, checks[label]


# a fused qkv Linear laid out per head (each head's q, k and v side by side in its 3·hs features), split into heads
# before its parts, as vfdev-5's notebook writes it
PER_HEAD = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 9, 24, 3


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.scale = (C // H) ** -0.5

    def forward(self, x):
        qkv = self.qkv(x).reshape(B, N, H, -1).transpose(1, 2)
        Q, K, V = qkv.chunk(3, dim=-1)  # BREAKPOINT S09, S10, S11
        attention = (Q @ K.transpose(-1, -2)) * self.scale  # BREAKPOINT S12
        attention = attention.softmax(dim=-1)  # BREAKPOINT S13
        heads = attention @ V  # BREAKPOINT S14
        return self.proj(heads.transpose(1, 2).reshape(B, N, -1))  # BREAKPOINT S15


with torch.no_grad():
    out = Attention().eval()(torch.randn(B, N, C))
'''
SPLIT = "Q, K, V = qkv.chunk(3, dim=-1)"


def test_a_per_head_fused_projection_split_into_its_parts_passes(tmp_path):
    code, checks = traced(tmp_path, PER_HEAD)
    assert code == 0 and all(checks[label]["passed"] is True for label in ("S09", "S10", "S11", "S12")), checks


def test_q_k_and_v_split_over_the_heads_axis_are_named_at_the_queries(tmp_path):
    code, checks = traced(tmp_path, PER_HEAD.replace(SPLIT, "Q, K, V = qkv.chunk(3, dim=1)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S09"), checks[""]
    assert checks["S09"]["evidence"]["name"] == "q, k and v split over the heads axis", checks["S09"]


# no class token and no position table (PVT, CvT): the block input is the patch embeddings, here through the patch
# embedding's own LayerNorm (PVT's); `POSITIONS` adds a table on an unmarked line instead
NO_POSITIONS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, C, H = 2, 16, 2


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, C, kernel_size=4, stride=4)
        self.norm = nn.LayerNorm(C)
        self.pos = nn.Parameter(torch.randn(1, 16, C))

    def forward(self, img):
        x = self.proj(img).flatten(2).transpose(1, 2)  # BREAKPOINT S04
        x = self.norm(x)
        return x


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(C)
        self.attn = nn.MultiheadAttention(C, H, batch_first=True)

    def forward(self, x):  # BREAKPOINT S08
        y = self.norm1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]  # BREAKPOINT S16
        return x  # BREAKPOINT S20


with torch.no_grad():
    img = torch.randn(B, 3, 16, 16)  # BREAKPOINT S01
    out = nn.Sequential(Embed(), Block(), Block()).eval()(img)
'''
POSITIONS = ("        x = self.norm(x)\n", "        x = self.norm(x) + self.pos\n")


def test_a_block_input_without_a_position_table_is_read_as_the_patch_embeddings(tmp_path):
    code, checks = traced(tmp_path, NO_POSITIONS)
    assert code == 0 and checks["S08"]["passed"] is True, checks["S08"]
    assert "no position table" in checks["S08"]["detail"], checks["S08"]


def test_a_block_input_with_positions_added_on_an_unmarked_line_stays_unread_not_red(tmp_path):
    code, checks = traced(tmp_path, NO_POSITIONS.replace(*POSITIONS))
    assert code == 0 and checks["S08"]["passed"] is None, checks["S08"]
