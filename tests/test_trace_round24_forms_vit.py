"""Forms round twenty-four's fresh ViTs taught `trace` (tests/trace_fresh/ROUND24_VIT.md), each in a script of ours.

- The head's input where the final LayerNorm ran in another method (zITnEt's ``out = self.encode(src)``, then
  ``self.output_proj(out[:, -1])``): the module calls of the head's line begin with the LayerNorm that made ``out``, a
  call that ran before the line, so the pooled row's claims were never checked on what the head was given and the last
  token pooled passed. That call is not one of the line's own (trace/reading/head_input.py ``_first_input``).
"""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

# a ViT whose encoder returns its final LayerNorm from a method of its own; the head picks row 0 of what it returned
HEAD_READS_AN_ENCODED_SEQUENCE = '''\
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


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.norm = nn.LayerNorm(C)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)  # BREAKPOINT S23


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, C, P, P)
        self.cls_token = nn.Parameter(torch.randn(1, 1, C))
        self.pos_embed = nn.Parameter(torch.randn(1, G * G + 1, C))
        self.encoder = Encoder()
        self.head = nn.Linear(C, 5)

    def encode(self, img):
        x = self.patch_embed(img).flatten(2).transpose(1, 2)  # BREAKPOINT S04
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)  # BREAKPOINT S06
        x = x + self.pos_embed  # BREAKPOINT S07
        return self.encoder(x)

    def forward(self, img):
        out = self.encode(img)
        return self.head(out[:, 0])  # BREAKPOINT S25


with torch.no_grad():
    logits = Model().eval()(torch.randn(B, 3, G * P, G * P))
'''


def test_a_head_given_row_0_of_a_sequence_normalised_in_another_method_passes(tmp_path):
    code, checks = traced(tmp_path, HEAD_READS_AN_ENCODED_SEQUENCE)
    assert code == 0 and checks[""]["first_failure"] is None, checks[""]
    assert checks["S25"]["passed"], checks["S25"]


@pytest.mark.parametrize("row", ["-1", "3"])
def test_a_head_given_another_row_of_a_sequence_normalised_in_another_method_is_the_wrong_token_pooled(tmp_path, row):
    code, checks = traced(tmp_path, HEAD_READS_AN_ENCODED_SEQUENCE.replace("out[:, 0]", f"out[:, {row}]"))
    assert code == 1 and checks[""]["first_failure"].startswith("S25"), checks[""]
    pooled = 9 if row == "-1" else 3
    assert f"the wrong token was pooled: it is row {pooled} of" in checks["S25"]["detail"], checks["S25"]
