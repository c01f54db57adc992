"""Round sixteen's fresh ViTs (tests/trace_fresh/ROUND16_VIT.md): the forms behind what `trace` left unread on their
first result, each held by a tiny script of our own (no upstream file).

- the tokens kept as a 2-D grid, (B, H', W', C) for (B, N, C), throughout the blocks (berniwal's Swin Transformer,
  rosinality's Twins-SVT: every step between the patch merging and the pooling is a grid): no captured tensor bound N,
  so every step of the block was "not checkable" ("needs the dimension N bound"). A grid of H'·W' tokens is read with
  the grid flattened row by row, and binds N where no (B, N, C) step does.
- q, k and v split into heads with the heads interleaved in the projection's channels (shreydan's notebook:
  `rearrange(q, 'b t (h n) -> b n t h', n=heads)`, head j holding channels j, j + h, …): unrecognised, "matches none
  of the forms". A fixed permutation of the projection's outputs, which its weights absorb: a correct form of the split.
- the image cut with its patch and grid axes swapped (`'b c (p1 h) (p2 w) -> b (h w) (p1 p2 c)'`, the notebook's
  planted B2): each token holds pixels a grid apart, not a patch; the flattened patches step was "not checkable"
  ("needs snapshot S02"). Read against the captured image, it is the bug form "pixels a grid apart, not a patch".
"""

from __future__ import annotations

from tests.conftest import trace_source as traced

# a pre-norm block over tokens kept as a 4 x 4 grid (B, 4, 4, C): the patch merge, the block input, the attention's
# output, both residual sums and the block output are grids; the attention flattens the grid for its heads
GRID = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, G, C, H = 2, 4, 16, 2
N = G * G


class Merge(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3 * 4 * 4, C)

    def forward(self, img):
        x = img.reshape(B, 3, G, 4, G, 4).permute(0, 2, 4, 3, 5, 1).reshape(B, G, G, 48)
        x = self.linear(x)  # BREAKPOINT S04
        return x


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.scale = (C // H) ** -0.5

    def forward(self, x):
        q, k, v = self.qkv(x.reshape(B, N, C)).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)  # BREAKPOINT S13
        out = (attn @ v).transpose(1, 2).reshape(B, G, G, C)
        return self.proj(out)  # BREAKPOINT S15


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
    img = torch.randn(B, 3, 16, 16)  # BREAKPOINT S01
    out = nn.Sequential(Merge(), Block(), Block()).eval()(img)
'''
GRID_STEPS = ("S04", "S08", "S16", "S19", "S20")


def test_tokens_kept_as_a_grid_are_read_flattened_row_by_row(tmp_path):
    code, checks = traced(tmp_path, GRID)
    assert code == 0, checks[""]
    for label in GRID_STEPS:
        assert checks[label]["passed"] is True, (label, checks[label])


def test_a_residual_dropped_on_a_grid_is_named_at_its_sum(tmp_path):
    code, checks = traced(tmp_path, GRID.replace("x = x + self.attn(self.norm1(x))", "x = self.attn(self.norm1(x))"))
    assert code == 1 and checks[""]["first_failure"].startswith("S16"), checks[""]
    assert checks["S16"]["evidence"] is not None, checks["S16"]


# einops' split with the heads innermost, `(hs h)`: head j holds channels j, j + h, ... of each projection; the heads
# merged back head-first, as the notebook does (also a permutation the output projection's weights absorb)
INTERLEAVED = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 9, 16, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C, bias=False)
        self.proj = nn.Linear(C, C)
        self.scale = (C // H) ** -0.5

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(B, N, C // H, H).permute(0, 3, 1, 2)  # BREAKPOINT S09
        k = k.reshape(B, N, C // H, H).permute(0, 3, 1, 2)  # BREAKPOINT S10
        v = v.reshape(B, N, C // H, H).permute(0, 3, 1, 2)  # BREAKPOINT S11
        scores = (q @ k.transpose(-2, -1)) * self.scale  # BREAKPOINT S12
        probs = scores.softmax(dim=-1)  # BREAKPOINT S13
        ctx = probs @ v  # BREAKPOINT S14
        return self.proj(ctx.transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S15


with torch.no_grad():
    out = Attention().eval()(torch.randn(B, N, C))
'''


def test_heads_interleaved_in_the_projections_channels_are_read_as_a_split(tmp_path):
    code, checks = traced(tmp_path, INTERLEAVED)
    assert code == 0, checks[""]
    for label in ("S09", "S10", "S11", "S12", "S13", "S14"):
        assert checks[label]["passed"] is True, (label, checks[label])
    assert "interleaved" in checks["S09"]["detail"], checks["S09"]


def test_a_split_neither_usual_nor_interleaved_stays_unrecognised(tmp_path):
    # the queries reshaped straight to (B, h, N, hs) without moving their heads axis: a bug form of its own, not read
    # as an interleaved split
    code, checks = traced(tmp_path, INTERLEAVED.replace("q = q.reshape(B, N, C // H, H).permute(0, 3, 1, 2)",
                                                        "q = q.reshape(B, H, N, C // H)"))
    assert checks["S09"]["passed"] is False, checks["S09"]
    assert checks["S09"]["evidence"]["name"] == "heads split without moving the axis", checks["S09"]


# the patches cut and flattened in one statement, channel-last, as einops' rearrange does (no 4-D patches step)
PATCHES = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, P, G, C = 2, 4, 4, 16

img = torch.randn(B, 3, P * G, P * G)  # BREAKPOINT S01
patches = img.reshape(B, 3, G, P, G, P).permute(0, 2, 4, 3, 5, 1).reshape(B, G * G, P * P * 3)  # BREAKPOINT S03
with torch.no_grad():
    x = nn.Linear(P * P * 3, C)(patches)  # BREAKPOINT S04
'''
CUT = "img.reshape(B, 3, G, P, G, P).permute(0, 2, 4, 3, 5, 1)"
STRIDED_CUT = "img.reshape(B, 3, P, G, P, G).permute(0, 3, 5, 2, 4, 1)"


def test_patches_cut_from_the_image_pass_and_pixels_a_grid_apart_are_named(tmp_path):
    (tmp_path / "patches").mkdir()
    (tmp_path / "strided").mkdir()
    code, checks = traced(tmp_path / "patches", PATCHES)
    assert code == 0 and checks["S03"]["passed"] is True, checks["S03"]
    code, checks = traced(tmp_path / "strided", PATCHES.replace(CUT, STRIDED_CUT))
    assert code == 1 and checks[""]["first_failure"].startswith("S03"), checks[""]
    assert checks["S03"]["evidence"]["name"] == "pixels a grid apart, not a patch", checks["S03"]


# Twins-SVT's position encoding: a depthwise convolution over the token grid added after the first block (PEG), so
# the first block's input is the patch embeddings (after their LayerNorm), and the positions added (S07) come after it
POSITIONS_AFTER_THE_FIRST_BLOCK = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, G, C, H = 2, 4, 16, 2
N = G * G


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.scale = (C // H) ** -0.5

    def forward(self, x):
        q, k, v = self.qkv(x).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)  # BREAKPOINT S13
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


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
        return x


embed = nn.Linear(48, C)
embed_norm = nn.LayerNorm(C)
peg = nn.Conv2d(C, C, 3, padding=1, groups=C)
blocks = nn.ModuleList([Block(), Block()]).eval()
with torch.no_grad():
    img = torch.randn(B, 3, 16, 16)  # BREAKPOINT S01
    patches = img.reshape(B, 3, G, 4, G, 4).permute(0, 2, 4, 3, 5, 1).reshape(B, N, 48)
    x = embed(patches)  # BREAKPOINT S04
    x = embed_norm(x)
    for i, block in enumerate(blocks):
        x = block(x)
        if i == 0:
            x = x + peg(x.transpose(1, 2).reshape(B, C, G, G)).flatten(2).transpose(1, 2)  # BREAKPOINT S07
'''


def test_a_first_block_fed_before_the_positions_are_added_is_no_red(tmp_path):
    # the positions (S07) are added after the first block ran: its input cannot be computed from them, so the patch
    # embeddings it was given are no evidence of "computed from S04 where S07 belongs"
    code, checks = traced(tmp_path, POSITIONS_AFTER_THE_FIRST_BLOCK)
    assert code == 0, checks[""]
    assert checks["S08"]["passed"] is not False, checks["S08"]
