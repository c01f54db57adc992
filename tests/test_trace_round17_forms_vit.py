"""Round seventeen's fresh ViTs (tests/trace_fresh/ROUND17_VIT.md): the forms behind what `trace` left unread or
unnamed on their first result, each held by a tiny script of our own (no upstream file).

- the attention class the blocks call, also run before the blocks at other sizes (lanl's Tokens-to-Token ViT: its
  token transformers call it on 256 tokens of width 8 before the first block holds 17 of width 16): hit k of a line in
  the layer loop was read as layer k's step, so the dimensions were bound from the stem's hits and every step of the
  blocks was "unrecognised" (their shapes fit no binding). The hits made before the first layer began, at sizes none
  of the layers' hits has, are read as outside the loop.
- unscaled scores so small that a 1/√hs inside the softmax moves the probabilities by less than the tolerance (lanl's
  token transformers, weights of std 0.02): read as "a scale applied at the softmax" (a factor of 0.9988 fitted). The
  softmax of the scores as they are is the exact fit: 1/√d missing.
- tokens merged between a block's two residual sums (Ctrl408's ToMe ViT: 17 tokens in the attention, 15 in the MLP,
  11 after the last block): every step after the merge was "unrecognised" (its token count fit no binding). Those steps
  are read with their own token count, and the MLP's residual sum as the MLP output plus a merge of the attention's
  residual sum (each token kept, or the sum or mean of a group); the MLP output alone, or a merge of the attention's
  output without the stream, is the bug form "residual dropped".
- an attention that adds its values to its output (lanl's T2T-ViT: `x = v + x` inside the attention module, in every
  block): the residual sums S16 and S19 fit no form with the marked output projection as the attention's output,
  unrecognised. Judged again with every layer's attention output plus V with its heads merged, they pass, said so; a
  skip of the queries, or of V reshaped without moving its heads, is named at the first sum (lanl's B3 and B1).
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


# a class token and positions, then pre-norm blocks that merge their last four tokens into two pairs (their sums)
# between their two residual sums: 10 tokens in the first attention, 8 in its MLP; the next block merges again (8 to 6)
MERGING = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 10, 16, 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc1, self.act, self.fc2 = nn.Linear(C, 2 * C), nn.GELU(), nn.Linear(2 * C, C)

    def attention(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, H, C // H).permute(2, 0, 3, 1, 4)
        probs = ((q @ k.transpose(-2, -1)) * (C // H) ** -0.5).softmax(dim=-1)
        out = self.proj((probs @ v).transpose(1, 2).reshape(b, n, C))  # BREAKPOINT S15
        return out

    def forward(self, x):  # BREAKPOINT S08
        attn_out = self.attention(self.norm1(x))
        x = x + attn_out  # BREAKPOINT S16
        x = torch.cat([x[:, :-4], x[:, -4:-2] + x[:, -2:]], dim=1)
        hidden = self.act(self.fc1(self.norm2(x)))  # BREAKPOINT S17
        out = self.fc2(hidden)  # BREAKPOINT S18
        x = x + out  # BREAKPOINT S19
        return x  # BREAKPOINT S20


with torch.no_grad():
    patches, cls, positions = torch.randn(B, N - 1, C), torch.randn(1, 1, C), torch.randn(1, N, C)
    x = torch.cat((cls.expand(B, -1, -1), patches), dim=1)  # BREAKPOINT S06
    x = x + positions  # BREAKPOINT S07
    for block in [Block(), Block()]:
        x = block(x)
'''
AFTER_THE_MERGE = ("S17", "S18", "S19", "S20")


def test_the_steps_after_a_token_merge_are_read_with_their_own_token_count(tmp_path):
    code, checks = traced(tmp_path, MERGING)
    assert code == 0, checks[""]
    for label in AFTER_THE_MERGE:
        assert checks[label]["passed"] is True, (label, checks[label])
    assert "merged" in checks["S19"]["detail"], checks["S19"]


def test_the_mlp_output_alone_after_a_merge_is_a_residual_dropped(tmp_path):
    code, checks = traced(tmp_path, MERGING.replace("x = x + out  # BREAKPOINT S19", "x = out  # BREAKPOINT S19"))
    assert code == 1 and checks[""]["first_failure"].startswith("S19"), checks[""]
    assert checks["S19"]["evidence"]["name"] == "residual dropped", checks["S19"]


def test_merging_the_attention_output_without_the_stream_is_a_residual_dropped(tmp_path):
    code, checks = traced(tmp_path, MERGING.replace("x = torch.cat([x[:, :-4], x[:, -4:-2] + x[:, -2:]], dim=1)",
                                                    "x = torch.cat([attn_out[:, :-4], attn_out[:, -4:-2] + "
                                                    "attn_out[:, -2:]], dim=1)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S19"), checks[""]
    assert checks["S19"]["evidence"]["name"] == "residual dropped", checks["S19"]


# pre-norm blocks whose attention adds V, its heads merged, to its projected output (T2T's skip)
VALUES_ADDED = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 9, 16, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)

    def forward(self, x):
        qkv = self.qkv(x).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # BREAKPOINT S09, S10, S11
        scores = (q @ k.transpose(-2, -1)) * (C // H) ** -0.5  # BREAKPOINT S12
        probs = scores.softmax(dim=-1)  # BREAKPOINT S13
        out = self.proj((probs @ v).transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S15
        return v.transpose(1, 2).reshape(B, N, C) + out


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn = Attention()
        self.mlp = nn.Sequential(nn.Linear(C, 2 * C), nn.GELU(), nn.Linear(2 * C, C))

    def forward(self, x):  # BREAKPOINT S08
        x = x + self.attn(self.norm1(x))  # BREAKPOINT S16
        x = x + self.mlp(self.norm2(x))  # BREAKPOINT S19
        return x  # BREAKPOINT S20


with torch.no_grad():
    x = torch.randn(B, N, C)
    for block in [Block(), Block()]:
        x = block(x)
'''


def test_an_attention_adding_its_values_to_its_output_is_read_at_the_residual_sums(tmp_path):
    code, checks = traced(tmp_path, VALUES_ADDED)
    assert code == 0, checks[""]
    for label in ("S15", "S16", "S19", "S20"):
        assert checks[label]["passed"] is True, (label, checks[label])
    assert "values added" in checks["S16"]["detail"] and "values added" in checks["S19"]["detail"], checks["S16"]


def test_an_attention_adding_its_queries_is_named_at_the_first_sum(tmp_path):
    code, checks = traced(tmp_path, VALUES_ADDED.replace("return v.transpose(1, 2)", "return q.transpose(1, 2)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S16"), checks[""]
    assert checks["S16"]["evidence"]["name"] == "skip term from the queries", checks["S16"]


def test_values_added_with_their_heads_not_moved_are_named_at_the_first_sum(tmp_path):
    code, checks = traced(tmp_path, VALUES_ADDED.replace("return v.transpose(1, 2).reshape(B, N, C) + out",
                                                         "return v.reshape(B, N, C) + out"))
    assert code == 1 and checks[""]["first_failure"].startswith("S16"), checks[""]
    assert checks["S16"]["evidence"]["name"] == "skip term's heads merged without moving their axis", checks["S16"]
