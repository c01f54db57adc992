"""The model classes of seed 002 (/work/shared/seeds/002_2ecca84339ca2461.txt, a notebook building a ViT from
scratch, as text), copied as they are; only the imports they use and breakpoint comments are added."""
import torch
import torch.nn as nn


class ViT_AttentionAPI_Residual_LayerNorm(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_ch=3,
                 embed_dim=64, num_classes=10, num_heads=1):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads

        # 1. Patch embedding
        self.patch_embed = nn.Conv2d(in_ch, embed_dim,
                                     kernel_size=patch_size, stride=patch_size)
        num_patches = (img_size // patch_size) ** 2

        # 2. CLS token + positional embeddings
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))

        # 3. Attention + LayerNorm
        self.norm1 = nn.LayerNorm(embed_dim)
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

        # 4. (Optional) Feedforward block
        self.norm2 = nn.LayerNorm(embed_dim)
        self.mlp = nn.Sequential(
            nn.Linear(embed_dim, 4 * embed_dim),
            nn.GELU(),
            nn.Linear(4 * embed_dim, embed_dim),
        )

        # 5. Classification head
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        B = x.shape[0]

        # --- Patchify ---
        x = self.patch_embed(x)               # [B, D, H/P, W/P]
        x = x.flatten(2).transpose(1, 2)      # [B, N, D]  # BREAKPOINT S04

        # --- Add CLS + Positional embeddings ---
        cls = self.cls_token.expand(B, -1, -1)  # BREAKPOINT S05
        x = torch.cat([cls, x], dim=1)        # [B, N+1, D]  # BREAKPOINT S06
        x = x + self.pos_embed  # BREAKPOINT S07, S08

        # --- Attention + residual ---
        x_norm = self.norm1(x)
        attn_out, _ = self.attn(x_norm, x_norm, x_norm)  # BREAKPOINT S15 attn_out
        # BREAKPOINT S13 _
        x = x + attn_out                      # residual 1

        # --- Feedforward + residual ---
        x_norm = self.norm2(x)  # BREAKPOINT S16
        mlp_out = self.mlp(x_norm)  # BREAKPOINT S18
        x = x + mlp_out                       # residual 2  # BREAKPOINT S19, S20

        # --- CLS token → classifier ---
        cls_out = x[:, 0]                     # [B, D]  # BREAKPOINT S24
        out = self.head(cls_out)  # BREAKPOINT S25
        return out
