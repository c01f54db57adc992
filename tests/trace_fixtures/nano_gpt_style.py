"""A nanoGPT-style byte GPT in plain tensors, marked with the GPT report's # BREAKPOINT Gxx numbering (G01–G27)."""
import math
import torch
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, H, L, V = 1, 6, 32, 4, 2, 256
wte, wpe = torch.randn(V, C) * 0.1, torch.randn(16, C) * 0.1
blocks = [{k: torch.randn(*s) * 0.1 for k, s in dict(attn=(C, 3 * C), proj=(C, C), fc=(C, 4 * C), fc2=(4 * C, C)).items()} for _ in range(L)]


def block(x, p):
    h = F.layer_norm(x, (C,))  # BREAKPOINT G06
    qkv = h @ p["attn"]  # BREAKPOINT G07
    q, k, v = qkv.split(C, dim=2)
    q = q.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G08
    k = k.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G09
    v = v.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G10
    att = q @ k.transpose(-2, -1) / math.sqrt(C // H)  # BREAKPOINT G11
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, 1, T, T)  # BREAKPOINT G12
    masked = att.masked_fill(~mask, float("-inf"))  # BREAKPOINT G13
    probs = F.softmax(masked, dim=-1)  # BREAKPOINT G14
    y = probs @ v  # BREAKPOINT G15
    concat = y.transpose(1, 2).contiguous().view(B, T, C)  # BREAKPOINT G16
    attn_out = concat @ p["proj"]  # BREAKPOINT G17
    residual_1 = x + attn_out  # BREAKPOINT G18
    mlp_in = F.layer_norm(residual_1, (C,))  # BREAKPOINT G19
    pre = mlp_in @ p["fc"]  # BREAKPOINT G20
    hidden = F.gelu(pre)  # BREAKPOINT G21
    mlp_out = hidden @ p["fc2"]  # BREAKPOINT G22
    residual_2 = residual_1 + mlp_out  # BREAKPOINT G23
    return residual_2


ids = torch.tensor([list(b"Hello!")])  # BREAKPOINT G01
tok = wte[ids]  # BREAKPOINT G02
pos = wpe[:T]  # BREAKPOINT G03
x = tok + pos  # BREAKPOINT G04
for p in blocks:
    x_in = x  # BREAKPOINT G05
    x = block(x_in, p)  # BREAKPOINT G24
ln_f = F.layer_norm(x, (C,))  # BREAKPOINT G25
logits = ln_f @ wte.T  # BREAKPOINT G26
probs = logits.softmax(-1)  # BREAKPOINT G27
