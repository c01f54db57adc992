"""The model classes of seed 002 (/work/shared/seeds/002_2ecca84339ca2461.txt, a notebook building a ViT from
scratch, as text), copied as they are; only the imports they use and breakpoint comments are added."""
import math

import torch
import torch.nn as nn


class SingleHeadAttentionViT(nn.Module):
    """
    Simplest Vision Transformer:
    - Patchify image using Conv2d
    - Add CLS + positional embeddings
    - Single-head self-attention (manual)
    - Classification head
    """
    def __init__(self, img_size=224, patch_size=16, in_ch=3,
                 embed_dim=64, num_classes=10):
        super().__init__()
        self.embed_dim = embed_dim

        # 1. Patch embedding
        self.patch_embed = nn.Conv2d(in_ch, embed_dim,
                                     kernel_size=patch_size, stride=patch_size)
        num_patches = (img_size // patch_size) ** 2

        # 2. CLS token + positional embeddings
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))

        # 3. Single-head Attention parameters
        self.W_q = nn.Linear(embed_dim, embed_dim)
        self.W_k = nn.Linear(embed_dim, embed_dim)
        self.W_v = nn.Linear(embed_dim, embed_dim)
        self.W_o = nn.Linear(embed_dim, embed_dim)

        # 4. Classification head
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        B = x.shape[0]

        # Patchify
        x = self.patch_embed(x)               # [B, D, H/P, W/P]
        x = x.flatten(2).transpose(1, 2)      # [B, N, D]  # BREAKPOINT S04

        # Add CLS + Positional embeddings
        cls = self.cls_token.expand(B, -1, -1)  # BREAKPOINT S05
        x = torch.cat([cls, x], dim=1)        # [B, N+1, D]  # BREAKPOINT S06
        x = x + self.pos_embed  # BREAKPOINT S07

        # Manual Self-Attention
        Q = self.W_q(x)  # BREAKPOINT S09
        K = self.W_k(x)  # BREAKPOINT S10
        V = self.W_v(x)  # BREAKPOINT S11

        scores = (Q @ K.transpose(-2, -1)) / math.sqrt(self.embed_dim)  # [B,N,N]  # BREAKPOINT S12
        attn = torch.softmax(scores, dim=-1)  # BREAKPOINT S13
        attn_out = attn @ V                                              # [B,N,D]  # BREAKPOINT S14
        x = self.W_o(attn_out)  # BREAKPOINT S15

        # CLS token -> classification head
        cls_out = x[:, 0]                    # [B, D]  # BREAKPOINT S24
        out = self.head(cls_out)             # [B, num_classes]  # BREAKPOINT S25
        return out
