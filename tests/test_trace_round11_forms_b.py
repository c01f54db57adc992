"""Round eleven's forms still missed after its merge (issue 40, tests/trace_fresh/ROUND11_VIT.md and ROUND11_GPT.md,
"after forms12"), each built in a tiny script of our own (no upstream code), failing without its fix, with a correct
twin that must stay green:

- a class token that joins after the blocks (CaiT's class-attention stage): every block runs on the patches alone,
  the class token is updated by blocks of its own no marker shows, and joins them only for the final sequence. S23
  holds one row more than the blocks: read with the class token's row first (where it joined), its other rows checked
  as the final LayerNorm of the last block's output; the head's pick of a patch's row (the class token appended
  last, the head still reading row 0) is the wrong token pooled, and the head reading the last row of a sequence
  the class token joined last is correct;
- the pre-norm rule read through LayerScale (`x = x + self.gamma_2 * self.mlp(self.norm2(x))`): a stream is also a
  step a sublayer's output joined × a learned gain per channel, so an MLP given the stream itself, its LayerNorm left
  out, is named as in a block without the gains;
- the patch tokens averaged over the batch axis (round ten's `x[:, 1:].mean(dim=0)` for `mean(dim=1)`): the pooled
  step (B, C) captured (N, C) reads as no layout; where it is the mean over axis 0 of the sequence the line read, the
  bug form "averaged over the batch axis" names it, and correct mean pooling passes;
- patches cut and flattened in one statement (S02 not markable): S03 is read against the captured image S01, each
  row the pixels of one patch (in any order inside it), the patches row by row; rows holding the patches column by
  column are named.
"""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

# a ViT whose class token joins after the blocks, updated by class-attention blocks that are not marked
CLASS_TOKEN_JOINS_AFTER_THE_BLOCKS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, C, H, P, G = 2, 16, 4, 4, 3  # a 3 x 3 grid of 4 x 4 patches


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(C)
        self.attn = nn.MultiheadAttention(C, H, batch_first=True)
        self.norm2 = nn.LayerNorm(C)
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

    def forward(self, x):  # BREAKPOINT S08
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]  # BREAKPOINT S16
        x = x + self.mlp(self.norm2(x))  # BREAKPOINT S19
        return x  # BREAKPOINT S20


class ClassAttentionBlock(nn.Module):
    """Updates the class token alone, attending to itself and the patches."""
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(C)
        self.attn = nn.MultiheadAttention(C, H, batch_first=True)

    def forward(self, x, cls):
        u = self.norm(torch.cat((cls, x), dim=1))
        return cls + self.attn(u[:, :1], u, u, need_weights=False)[0]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, C, P, P)
        self.cls_token = nn.Parameter(torch.randn(1, 1, C))
        self.pos_embed = nn.Parameter(torch.randn(1, G * G, C))
        self.blocks = nn.ModuleList([Block(), Block()])
        self.class_blocks = nn.ModuleList([ClassAttentionBlock(), ClassAttentionBlock()])
        self.norm = nn.LayerNorm(C)
        self.head = nn.Linear(C, 5)

    def forward(self, img):
        x = self.patch_embed(img).flatten(2).transpose(1, 2)  # BREAKPOINT S04
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)  # BREAKPOINT S05
        x = x + self.pos_embed  # BREAKPOINT S07
        for blk in self.blocks:
            x = blk(x)
        for blk in self.class_blocks:
            cls_tokens = blk(x, cls_tokens)
        x = torch.cat((cls_tokens, x), dim=1)
        x = self.norm(x)  # BREAKPOINT S23
        return self.head(x[:, 0])  # BREAKPOINT S25


with torch.no_grad():
    logits = Model().eval()(torch.randn(B, 3, G * P, G * P))
'''
JOIN = "x = torch.cat((cls_tokens, x), dim=1)"
JOINED_LAST = "x = torch.cat((x, cls_tokens), dim=1)"


@pytest.mark.parametrize("join, pick", [(JOIN, "x[:, 0]"), (JOINED_LAST, "x[:, -1]")],
                         ids=["joined-first-head-reads-row-0", "joined-last-head-reads-the-last-row"])
def test_a_class_token_joining_after_the_blocks_is_read_and_its_final_sequence_checked(tmp_path, join, pick):
    code, checks = traced(tmp_path, CLASS_TOKEN_JOINS_AFTER_THE_BLOCKS.replace(JOIN, join).replace("x[:, 0]", pick))
    assert code == 0 and checks[""]["first_failure"] is None, checks[""]
    assert checks["S23"]["passed"], checks["S23"]
    assert "row 0, the class token that joined after the blocks, is not checked" in checks["S23"]["name"]
    assert checks["S25"]["passed"], checks["S25"]


def test_a_class_token_joined_last_while_the_head_reads_row_0_is_the_wrong_token_pooled(tmp_path):
    code, checks = traced(tmp_path, CLASS_TOKEN_JOINS_AFTER_THE_BLOCKS.replace(JOIN, JOINED_LAST))
    assert code == 1 and checks[""]["first_failure"].startswith("S25"), checks[""]
    assert "the wrong token was pooled: it is row 1 of x (S23), not row 0" in checks["S25"]["detail"], checks["S25"]


# a pre-norm block whose residual sums scale each sublayer output by a learned gain per channel (LayerScale)
LAYER_SCALED_BLOCK = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 9, 16, 4


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))  # BREAKPOINT S18


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(C)
        self.attn = nn.MultiheadAttention(C, H, batch_first=True)
        self.norm2 = nn.LayerNorm(C)
        self.mlp = Mlp()
        self.gamma_1 = nn.Parameter(0.1 * torch.ones(C))
        self.gamma_2 = nn.Parameter(0.1 * torch.ones(C))

    def forward(self, x):  # BREAKPOINT S08
        h = self.norm1(x)
        x = x + self.gamma_1 * self.attn(h, h, h, need_weights=False)[0]  # BREAKPOINT S16
        x = x + self.gamma_2 * self.mlp(self.norm2(x))  # BREAKPOINT S19
        return x  # BREAKPOINT S20


with torch.no_grad():
    out = Block().eval()(torch.randn(B, N, C))
'''
MLP_OF_THE_NORM = "self.gamma_2 * self.mlp(self.norm2(x))"


def test_a_layer_scaled_pre_norm_block_passes(tmp_path):
    code, checks = traced(tmp_path, LAYER_SCALED_BLOCK)
    assert code == 0 and checks[""]["first_failure"] is None, checks[""]
    assert "LayerScale" in checks["S16"]["detail"], checks["S16"]


def test_a_layer_scaled_mlp_given_the_stream_is_named_where_its_linears_are_called(tmp_path):
    code, checks = traced(tmp_path, LAYER_SCALED_BLOCK.replace(MLP_OF_THE_NORM, "self.gamma_2 * self.mlp(x)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S18"), checks[""]
    assert "was given x (S16) itself (equal within the tolerance), where a LayerNorm of it belongs" in \
        checks["S18"]["detail"], checks["S18"]


# a ViT pooling the mean of its patch tokens (the class token left out), with no final sequence marked
MEAN_POOLED = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, C, H, P, G = 2, 16, 4, 4, 3  # a 3 x 3 grid of 4 x 4 patches


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, C, P, P)
        self.cls_token = nn.Parameter(torch.randn(1, 1, C))
        self.pos_embed = nn.Parameter(torch.randn(1, G * G + 1, C))
        layer = nn.TransformerEncoderLayer(C, H, 4 * C, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(C)
        self.head = nn.Linear(C, 5)

    def forward(self, img):
        x = self.patch_embed(img).flatten(2).transpose(1, 2)  # BREAKPOINT S04
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)  # BREAKPOINT S05
        x = torch.cat((cls_tokens, x), dim=1)  # BREAKPOINT S06
        x = x + self.pos_embed  # BREAKPOINT S07
        x = self.blocks(x)
        x = x[:, 1:].mean(dim=1)  # BREAKPOINT S24
        return self.head(self.norm(x))  # BREAKPOINT S25


with torch.no_grad():
    logits = Model().eval()(torch.randn(B, 3, G * P, G * P))
'''


def test_mean_pooling_over_the_positions_passes(tmp_path):
    code, checks = traced(tmp_path, MEAN_POOLED)
    assert code == 0 and checks[""]["first_failure"] is None, checks[""]
    assert checks["S24"]["passed"] and "the mean over the positions after row 0" in checks["S24"]["detail"]


def test_patch_tokens_averaged_over_the_batch_axis_are_named(tmp_path):
    code, checks = traced(tmp_path, MEAN_POOLED.replace("mean(dim=1)", "mean(dim=0)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S24"), checks[""]
    assert "the tokens were averaged over the batch axis" in checks["S24"]["detail"], checks["S24"]


# patches cut from the image and flattened channel-last in one statement: no 4-D patches to mark as S02
CUT_AND_FLATTENED = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, Ch, P, G, C = 2, 3, 4, 3, 16  # a 3 x 3 grid of 4 x 4 patches


class PatchEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(P * P * Ch, C)

    def forward(self, img):
        # cut and flatten in one statement, each patch channel-last (ph pw c)
        out = img.reshape(B, Ch, G, P, G, P).permute(0, 2, 4, 3, 5, 1).reshape(B, G * G, P * P * Ch)  # BREAKPOINT S03
        return self.proj(out)  # BREAKPOINT S04


img = torch.randn(B, Ch, G * P, G * P)  # BREAKPOINT S01
with torch.no_grad():
    x = PatchEmbedding()(img)
'''
ROW_BY_ROW = "permute(0, 2, 4, 3, 5, 1)"


def test_patches_cut_and_flattened_in_one_statement_are_read_against_the_image(tmp_path):
    code, checks = traced(tmp_path, CUT_AND_FLATTENED)
    assert code == 0 and checks[""]["first_failure"] is None, checks[""]
    assert checks["S03"]["passed"] and "read from the image img (S01)" in checks["S03"]["name"], checks["S03"]


def test_patches_taken_column_by_column_are_named_against_the_image(tmp_path):
    code, checks = traced(tmp_path, CUT_AND_FLATTENED.replace(ROW_BY_ROW, "permute(0, 4, 2, 3, 5, 1)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S03"), checks[""]
    assert "patches taken column by column" in checks["S03"]["detail"], checks["S03"]
