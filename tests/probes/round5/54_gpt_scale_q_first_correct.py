"""Probe: correct GPT, 1/sqrt(hs) applied to q before the product: expect 0 failed"""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, H, V = 2, 5, 16, 2, 256
hs = C // H


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln_1 = nn.LayerNorm(C)
        s.c_attn = nn.Linear(C, 3 * C)
        s.c_proj = nn.Linear(C, C)
        s.ln_2 = nn.LayerNorm(C)
        s.fc = nn.Linear(C, 4 * C)
        s.proj = nn.Linear(4 * C, C)
        s.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(s, x):  # BREAKPOINT G05
        attn_in = s.ln_1(x)  # BREAKPOINT G06
        qkv = s.c_attn(attn_in)  # BREAKPOINT G07
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, H, hs).transpose(1, 2)  # BREAKPOINT G08
        k = k.view(B, T, H, hs).transpose(1, 2)  # BREAKPOINT G09
        v = v.view(B, T, H, hs).transpose(1, 2)  # BREAKPOINT G10
        scores = (q * hs ** -0.5) @ k.transpose(-2, -1)  # BREAKPOINT G11
        masked = scores.masked_fill(s.bias[:, :, :T, :T] == 0, float("-inf"))  # BREAKPOINT G13
        probs = F.softmax(masked, dim=-1)  # BREAKPOINT G14
        context = probs @ v  # BREAKPOINT G15
        concat = context.transpose(1, 2).contiguous().view(B, T, C)  # BREAKPOINT G16
        attn_out = s.c_proj(concat)  # BREAKPOINT G17
        residual_1 = x + attn_out  # BREAKPOINT G18
        mlp_in = s.ln_2(residual_1)  # BREAKPOINT G19
        pre_activation = s.fc(mlp_in)  # BREAKPOINT G20
        hidden = F.gelu(pre_activation)  # BREAKPOINT G21
        mlp_out = s.proj(hidden)  # BREAKPOINT G22
        residual_2 = residual_1 + mlp_out  # BREAKPOINT G23
        return residual_2


wte = nn.Embedding(V, C)
wpe = nn.Embedding(T, C)
block = Block()
ln_f = nn.LayerNorm(C)
with torch.no_grad():
    ids = torch.randint(0, V, (B, T))  # BREAKPOINT G01
    tok = wte(ids)  # BREAKPOINT G02
    pos = wpe(torch.arange(T))  # BREAKPOINT G03
    x = tok + pos  # BREAKPOINT G04
    x = block(x)  # BREAKPOINT G24
    normed = ln_f(x)  # BREAKPOINT G25
    logits = normed @ wte.weight.T  # BREAKPOINT G26
    probs = logits.softmax(-1)  # BREAKPOINT G27
print("logits", tuple(logits.shape))
