"""A small ViT written with nn.Modules (nn.Linear, nn.LayerNorm, nn.Conv2d), marked with the seed ViT's numbering:
the weight-aware checks read its module calls. tests/test_trace_module_variants.py traces variants of it."""
import math, torch, torch.nn as nn, torch.nn.functional as F
W, H, HS, N_BLOCKS = 48, 3, 16, 2

class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(W, W); self.k = nn.Linear(W, W); self.v = nn.Linear(W, W); self.proj = nn.Linear(W, W)
    def forward(self, x):
        B, N, C = x.shape
        q = self.q(x).view(B, N, H, HS).transpose(1, 2)  # BREAKPOINT S09
        k = self.k(x).view(B, N, H, HS).transpose(1, 2)  # BREAKPOINT S10
        v = self.v(x).view(B, N, H, HS).transpose(1, 2)  # BREAKPOINT S11
        scores = q @ k.transpose(-2, -1) / math.sqrt(HS)  # BREAKPOINT S12
        probs = scores.softmax(-1)  # BREAKPOINT S13
        ctx = probs @ v  # BREAKPOINT S14
        out = self.proj(ctx.transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S15
        return out

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(W); self.attn = Attn(); self.ln2 = nn.LayerNorm(W)
        self.fc1 = nn.Linear(W, 2 * W); self.fc2 = nn.Linear(2 * W, W)
    def forward(self, x):
        x_in = x  # BREAKPOINT S08
        a = self.attn(self.ln1(x_in))
        x = x_in + a
        f_in = self.ln2(x)  # BREAKPOINT S16
        h = F.gelu(self.fc1(f_in))  # BREAKPOINT S17
        f = self.fc2(h)  # BREAKPOINT S18
        x = x + f  # BREAKPOINT S19, S20
        return x

class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, W, 8, 8)
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, W)); self.pos = nn.Parameter(0.02 * torch.randn(1, 17, W))
        self.blocks = nn.ModuleList([Block() for _ in range(N_BLOCKS)])
        self.norm = nn.LayerNorm(W); self.head = nn.Linear(W, 10)
    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)  # BREAKPOINT S04
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1)  # BREAKPOINT S06
        x = x + self.pos  # BREAKPOINT S07
        for b in self.blocks:
            x = b(x)
        x = self.norm(x)  # BREAKPOINT S23
        c = x[:, 0]  # BREAKPOINT S24
        logits = self.head(c)  # BREAKPOINT S25
        return logits

torch.manual_seed(0)
model = ViT().eval()
for m in model.modules():
    if isinstance(m, nn.LayerNorm):
        nn.init.normal_(m.weight, 1.0, 0.1); nn.init.normal_(m.bias, 0, 0.1)
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(-1)  # BREAKPOINT S26
print(probs.argmax(-1).tolist())
