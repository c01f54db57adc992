"""Base GPT (nanoGPT's model, karpathy/nanoGPT as in tests/trace_corpus, shrunk and with its manual attention path):
nn.Module classes, a fused q/k/v nn.Linear, a registered lower-triangular buffer as the causal mask, pre-norm blocks,
learned positions, the head tied to the token embedding; G01–G27 marked. Sizes chosen so that no two named dimensions
are equal (B 2, T 6, C 24, h 3, hs 8, M 96, V 256)."""

import math

import torch
import torch.nn as nn
from torch.nn import functional as F

BLOCK_SIZE, VOCAB, LAYERS, HEADS, WIDTH, DROPOUT = 16, 256, 2, 3, 24, 0.0


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
        self.c_proj = nn.Linear(WIDTH, WIDTH)
        self.attn_dropout = nn.Dropout(DROPOUT)
        self.resid_dropout = nn.Dropout(DROPOUT)
        self.n_head = HEADS
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK_SIZE, BLOCK_SIZE)).view(1, 1, BLOCK_SIZE, BLOCK_SIZE))

    def forward(self, x):
        B, T, C = x.size()
        qkv = self.c_attn(x)  # BREAKPOINT G07
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # BREAKPOINT G08
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # BREAKPOINT G09
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # BREAKPOINT G10
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # BREAKPOINT G11
        mask = self.bias[:, :, :T, :T]  # BREAKPOINT G12
        att = att.masked_fill(mask == 0, float("-inf"))  # BREAKPOINT G13
        att = F.softmax(att, dim=-1)  # BREAKPOINT G14
        att = self.attn_dropout(att)
        y = att @ v  # BREAKPOINT G15
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # BREAKPOINT G16
        y = self.resid_dropout(self.c_proj(y))  # BREAKPOINT G17
        return y


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * WIDTH, WIDTH)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, x):
        x = self.c_fc(x)  # BREAKPOINT G20
        x = self.gelu(x)  # BREAKPOINT G21
        x = self.c_proj(x)  # BREAKPOINT G22
        x = self.dropout(x)
        return x


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(WIDTH)
        self.mlp = MLP()

    def forward(self, x):  # BREAKPOINT G05
        h = self.ln_1(x)  # BREAKPOINT G06
        x = x + self.attn(h)  # BREAKPOINT G18
        h = self.ln_2(x)  # BREAKPOINT G19
        x = x + self.mlp(h)  # BREAKPOINT G23
        return x


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(VOCAB, WIDTH),
            wpe=nn.Embedding(BLOCK_SIZE, WIDTH),
            drop=nn.Dropout(DROPOUT),
            h=nn.ModuleList([Block() for _ in range(LAYERS)]),
            ln_f=nn.LayerNorm(WIDTH),
        ))
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        tok_emb = self.transformer.wte(idx)  # BREAKPOINT G02
        pos_emb = self.transformer.wpe(pos)  # BREAKPOINT G03
        x = self.transformer.drop(tok_emb + pos_emb)  # BREAKPOINT G04
        for block in self.transformer.h:
            x = block(x)  # BREAKPOINT G24
        x = self.transformer.ln_f(x)  # BREAKPOINT G25
        logits = self.lm_head(x)  # BREAKPOINT G26
        return logits


torch.manual_seed(0)
model = GPT().eval()
ids = torch.tensor([list(b"Hello!"), list(b"world.")])  # BREAKPOINT G01
with torch.no_grad():
    logits = model(ids)
    probs = logits.softmax(-1)  # BREAKPOINT G27
print("next bytes:", probs[:, -1].argmax(-1).tolist())
