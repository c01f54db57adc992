"""Forms that round three's fresh GPT-style code (tests/trace_fresh/ROUND3_GPT.md) wrote and `trace` misread, traced
end to end on a tiny script of our own: one ``Head`` module per attention head (the "Let's build GPT" lecture's
layout), whose attention lines run once per head, so they are no count of layers, in a stack deeper than the bundled
GPT's checkpoint. The final LayerNorm reads the last block's output: correct code passes, and a final norm of the
wrong tensor is named there."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

PER_HEAD_GPT = '''\
import torch
import torch.nn as nn
from torch.nn import functional as F

torch.manual_seed(0)
B, T, C, H, LAYERS = 2, 6, 16, 2, 3


class Head(nn.Module):
    def __init__(self, hs):
        super().__init__()
        self.key = nn.Linear(C, hs, bias=False)
        self.query = nn.Linear(C, hs, bias=False)
        self.value = nn.Linear(C, hs, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(T, T)))

    def forward(self, x):
        k = self.key(x)  # BREAKPOINT G09
        q = self.query(x)  # BREAKPOINT G08
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5  # BREAKPOINT G11
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))  # BREAKPOINT G13
        wei = F.softmax(wei, dim=-1)  # BREAKPOINT G14
        v = self.value(x)  # BREAKPOINT G10
        return wei @ v


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([Head(C // H) for _ in range(H)])
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        return self.proj(out)  # BREAKPOINT G17


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.sa, self.ln1, self.ln2 = MultiHead(), nn.LayerNorm(C), nn.LayerNorm(C)
        self.ffwd = nn.Sequential(nn.Linear(C, 4 * C), nn.ReLU(), nn.Linear(4 * C, C))

    def forward(self, x):  # BREAKPOINT G05
        x = x + self.sa(self.ln1(x))  # BREAKPOINT G18
        x = x + self.ffwd(self.ln2(x))  # BREAKPOINT G23
        return x  # BREAKPOINT G24


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(50, C), nn.Embedding(T, C)
        self.blocks = nn.Sequential(*[Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(C)

    def forward(self, idx):
        tok_emb = self.tok(idx)  # BREAKPOINT G02
        x = tok_emb + self.pos(torch.arange(T))  # BREAKPOINT G04
        x = self.blocks(x)
        return self.ln_f(x)  # BREAKPOINT G25


with torch.no_grad():
    GPT().eval()(torch.randint(0, 50, (B, T)))
'''


def test_one_module_per_head_is_no_count_of_layers_and_the_final_norm_reads_the_last_block(tmp_path):
    code, checks = traced(tmp_path, PER_HEAD_GPT)
    assert code == 0, checks[""]
    assert checks["G25"]["passed"] is True, checks["G25"]["detail"]
    assert checks[""]["counts"]["failed"] == 0


@pytest.mark.parametrize("old, new", [("return self.ln_f(x)", "return self.ln_f(tok_emb)")])
def test_a_final_norm_of_the_wrong_tensor_is_named_there(tmp_path, old, new):
    code, checks = traced(tmp_path, PER_HEAD_GPT.replace(old, new))
    assert code == 1
    assert checks[""]["first_failure"].startswith("G25"), checks[""]["first_failure"]
    assert checks["G25"]["evidence"]["name"] == "computed from another tensor", checks["G25"]["detail"]
