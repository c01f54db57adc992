"""Round seventeen's fresh ViTs (tests/trace_fresh/ROUND17_VIT.md): the forms behind what `trace` left unread or
unnamed on their first result, each held by a tiny script of our own (no upstream file).

- the attention class the blocks call, also run before the blocks at other sizes (lanl's Tokens-to-Token ViT: its
  token transformers call it on 256 tokens of width 8 before the first block holds 17 of width 16): hit k of a line in
  the layer loop was read as layer k's step, so the dimensions were bound from the stem's hits and every step of the
  blocks was "unrecognised" (their shapes fit no binding). The hits made before the first layer began, at sizes none
  of the layers' hits has, are read as outside the loop.
"""

from __future__ import annotations

from tests.conftest import trace_source as traced

# one Attention class, run by a "token transformer" on 36 tokens of width 8 (read from 12 channels) before the two
# pre-norm blocks run it on 10 tokens of width 16
STEM = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, H = 2, 2


class Attention(nn.Module):
    def __init__(self, dim, width):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * width)
        self.proj = nn.Linear(width, width)
        self.heads, self.width = H, width

    def forward(self, x):
        b, n, _ = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, self.width // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # BREAKPOINT S09, S10, S11
        scores = (q @ k.transpose(-2, -1)) * (self.width // self.heads) ** -0.5  # BREAKPOINT S12
        probs = scores.softmax(dim=-1)  # BREAKPOINT S13
        return self.proj((probs @ v).transpose(1, 2).reshape(b, n, self.width))


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):  # BREAKPOINT S08
        x = x + self.attn(self.norm1(x))  # BREAKPOINT S16
        x = x + self.mlp(self.norm2(x))  # BREAKPOINT S19
        return x  # BREAKPOINT S20


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = Attention(12, 8)
        self.embed = nn.Linear(4 * 8, 16)
        self.cls = nn.Parameter(torch.randn(1, 1, 16))
        self.blocks = nn.ModuleList([Block(16), Block(16)])

    def forward(self, img):
        tokens = img.reshape(B, 3, 6, 2, 6, 2).permute(0, 2, 4, 1, 3, 5).reshape(B, 36, 12)
        tokens = self.stem(tokens).reshape(B, 3, 2, 3, 2, 8).permute(0, 1, 3, 2, 4, 5).reshape(B, 9, 32)
        x = self.embed(tokens)
        x = torch.cat((self.cls.expand(B, -1, -1), x), dim=1)  # BREAKPOINT S06
        for block in self.blocks:
            x = block(x)
        return x


with torch.no_grad():
    img = torch.randn(B, 3, 12, 12)  # BREAKPOINT S01
    out = Model().eval()(img)
'''
BLOCK_STEPS = ("S08", "S12", "S13", "S16", "S20")


def test_the_blocks_attention_run_before_the_blocks_is_read_at_the_blocks_sizes(tmp_path):
    code, checks = traced(tmp_path, STEM)
    assert code == 0, checks[""]
    for label in BLOCK_STEPS:
        assert checks[label]["passed"] is True, (label, checks[label])
    assert "17" not in checks["S12"]["detail"] and "1,600" not in checks["S12"]["detail"], checks["S12"]


def test_a_scale_left_out_in_the_blocks_attention_is_named_at_the_first_layer(tmp_path):
    code, checks = traced(tmp_path, STEM.replace(" * (self.width // self.heads) ** -0.5  # BREAKPOINT S12",
                                                 "  # BREAKPOINT S12"))
    assert code == 1 and checks[""]["first_failure"].startswith("S12"), checks[""]
    assert checks["S12"]["evidence"]["name"] == "1/√d missing", checks["S12"]


# an attention of small weights and no bias (lanl's token transformers: weights of std 0.02 over hundreds of tokens):
# the scores are so small that a 1/√hs inside the softmax moves the probabilities by less than the tolerance
SMALL_SCORES = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 17, 16, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C, bias=False)
        nn.init.trunc_normal_(self.qkv.weight, std=0.002)
        self.scale = (C // H) ** -0.5

    def forward(self, x):
        qkv = self.qkv(x).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # BREAKPOINT S09, S10, S11
        scores = (q * self.scale) @ k.transpose(-2, -1)  # BREAKPOINT S12
        probs = scores.softmax(dim=-1)  # BREAKPOINT S13
        return probs @ v


with torch.no_grad():
    out = Attention().eval()(torch.randn(B, N, C))
'''


def test_small_scores_with_their_scale_pass(tmp_path):
    code, checks = traced(tmp_path, SMALL_SCORES)
    assert code == 0 and checks["S12"]["passed"] is True, checks["S12"]


def test_a_scale_left_out_of_small_scores_is_not_read_as_applied_at_the_softmax(tmp_path):
    """Before: "equals Q·Kᵀ, a scale applied at the softmax" (a factor of 0.9988 fitted from probabilities the scale
    could not move): the softmax of the scores as they are is the exact fit, so no scale was applied anywhere."""
    code, checks = traced(tmp_path, SMALL_SCORES.replace("(q * self.scale) @", "q @"))
    assert code == 1 and checks[""]["first_failure"].startswith("S12"), checks[""]
    assert checks["S12"]["evidence"]["name"] == "1/√d missing", checks["S12"]
