"""A Vision Transformer small enough to check with a pencil: seed 004's 6×6 walkthrough, computed for real.

The architecture of "An Image is Worth 16x16 Words" (Dosovitskiy et al., 2021) at the sizes of the seed's
worked example: a 6×6 grayscale image, 2×2 patches (nine of them, A to I, row by row), model width 4, one
encoder layer with one attention head, an MLP of width 8, three classes (cat, dog, bird).

Where this model follows the seed rather than the paper, it says so here and on the report's pages:
    * the encoder layer is post-norm (Add & Norm after each sub-layer), as the seed draws it; the paper's
      ViT normalises before each sub-layer and once more at the end;
    * the MLP's non-linearity is ReLU, as in the seed's arithmetic; the paper uses GELU;
    * the patch projection E has no bias, as in the paper's equation (1) and the seed.
Attention is scaled dot-product attention as in the paper (scores divided by √hs); the seed skips the
scaling, so its "raw scores" are recorded too (``attn.dots``, before the division).

Shape legend, used in every comment of this file:
    B   batch size
    Ch  colour channels (1: grayscale); H, W image height and width
    P   patch size (pixels per side)
    N   number of patches, (H / P) * (W / P); N1 = N + 1 tokens with [CLS]
    C   model width
    h   number of attention heads
    hs  head size, C // h
    M   MLP width
    K   number of classes
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from models.recording import name_modules, record


@dataclass(frozen=True)
class ToyViTConfig:
    image_size: int = 6
    patch_size: int = 2
    in_channels: int = 1
    d_model: int = 4
    n_heads: int = 1
    mlp_dim: int = 8
    n_layers: int = 1
    n_classes: int = 3
    layer_norm_eps: float = 1e-6  # as torchvision's ViT; the seed divides by the bare standard deviation

    def __post_init__(self) -> None:
        if self.image_size % self.patch_size:
            raise ValueError(f"image size {self.image_size} is not a multiple of the patch size {self.patch_size}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")

    @property
    def grid(self) -> int:
        return self.image_size // self.patch_size

    @property
    def n_patches(self) -> int:
        return self.grid**2

    @property
    def head_size(self) -> int:
        return self.d_model // self.n_heads


# ----------------------------------------------------------------------------- record points


def record_points(cfg: ToyViTConfig) -> dict[str, tuple[str, ...]]:
    """Every name a recorded forward pass stores, with its shape in the legend's letters, in computation order."""
    points: dict[str, tuple[str, ...]] = {
        "image": ("B", "Ch", "H", "W"), "patch_embed.patches": ("B", "N", "Ch", "P", "P"),
        "patch_embed.flat": ("B", "N", "Ch·P·P"), "patch_embed.embed": ("B", "N", "C"),
        "cls_token": ("B", "1", "C"), "tokens": ("B", "N1", "C"), "tokens_pos": ("B", "N1", "C"),
    }
    for i in range(cfg.n_layers):
        block = f"blocks.{i}"
        points |= {f"{block}.input": ("B", "N1", "C")}
        points |= {f"{block}.attn.{name}": ("B", "h", "N1", "hs") for name in ("q", "k", "v")}
        points |= {f"{block}.attn.dots": ("B", "h", "N1", "N1"), f"{block}.attn.scores": ("B", "h", "N1", "N1"),
                   f"{block}.attn.probs": ("B", "h", "N1", "N1"), f"{block}.attn.context": ("B", "h", "N1", "hs"),
                   f"{block}.attn.concat": ("B", "N1", "C"), f"{block}.attn.out": ("B", "N1", "C"),
                   f"{block}.residual_1": ("B", "N1", "C"), f"{block}.ln_1": ("B", "N1", "C"),
                   f"{block}.mlp.fc1": ("B", "N1", "M"), f"{block}.mlp.hidden": ("B", "N1", "M"),
                   f"{block}.mlp.out": ("B", "N1", "C"), f"{block}.residual_2": ("B", "N1", "C"),
                   f"{block}.ln_2": ("B", "N1", "C"), f"{block}.output": ("B", "N1", "C")}
    points |= {"cls_rep": ("B", "C"), "logits": ("B", "K"), "probs": ("B", "K")}
    return points


# ----------------------------------------------------------------------------- leaf modules


class PatchEmbedding(nn.Module):
    """Cut the image into P x P patches, flatten each row by row, and multiply it by E (no bias)."""

    def __init__(self, cfg: ToyViTConfig) -> None:
        super().__init__()
        self.patch_size = cfg.patch_size
        self.proj = nn.Linear(cfg.in_channels * cfg.patch_size**2, cfg.d_model, bias=False)  # weight = Eᵀ

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        B, Ch, H, W = image.shape
        P = self.patch_size
        grid = image.unfold(2, P, P).unfold(3, P, P)  # (B, Ch, H/P, W/P, P, P)
        patches = grid.permute(0, 2, 3, 1, 4, 5).reshape(B, -1, Ch, P, P)  # (B, N, Ch, P, P): A, B, C in the top row
        patches = record(self, "patches", patches)
        flat = record(self, "flat", patches.flatten(2))  # (B, N, Ch*P*P): left to right, top to bottom
        return record(self, "embed", self.proj(flat))  # (B, N, C) = flat @ E


class SelfAttention(nn.Module):
    """Scaled dot-product self-attention with separate q, k, v and output projections, written out step by step."""

    def __init__(self, cfg: ToyViTConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.query = nn.Linear(cfg.d_model, cfg.d_model)
        self.key = nn.Linear(cfg.d_model, cfg.d_model)
        self.value = nn.Linear(cfg.d_model, cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N1, C = x.shape
        h = self.n_heads
        # (B, N1, C) -> (B, N1, h, hs) -> (B, h, N1, hs): one row of features per head
        q = record(self, "q", self.query(x).view(B, N1, h, C // h).transpose(1, 2))
        k = record(self, "k", self.key(x).view(B, N1, h, C // h).transpose(1, 2))
        v = record(self, "v", self.value(x).view(B, N1, h, C // h).transpose(1, 2))
        dots = record(self, "dots", q @ k.transpose(-2, -1))  # (B, h, N1, N1): the seed's "raw scores"
        scores = record(self, "scores", dots / math.sqrt(C // h))  # (B, h, N1, N1)
        probs = record(self, "probs", scores.softmax(dim=-1))  # (B, h, N1, N1), rows sum to 1
        context = record(self, "context", probs @ v)  # (B, h, N1, hs): each row a weighted sum of value rows
        concat = record(self, "concat", context.transpose(1, 2).reshape(B, N1, C))  # (B, h, N1, hs) -> (B, N1, h, hs) -> (B, N1, C)
        return record(self, "out", self.proj(concat))  # (B, N1, C)


class MLP(nn.Module):
    """FFN(x) = ReLU(x W₁ + b₁) W₂ + b₂, as the seed writes it."""

    def __init__(self, cfg: ToyViTConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.mlp_dim)
        self.fc2 = nn.Linear(cfg.mlp_dim, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre_activation = record(self, "fc1", self.fc1(x))  # (B, N1, M)
        hidden = record(self, "hidden", F.relu(pre_activation))  # (B, N1, M)
        return record(self, "out", self.fc2(hidden))  # (B, N1, C)


# ----------------------------------------------------------------------------- block


class EncoderBlock(nn.Module):
    """Post-norm, as the seed draws it: LN(x + Attention(x)), then LN(. + MLP(.))."""

    def __init__(self, cfg: ToyViTConfig) -> None:
        super().__init__()
        self.attn = SelfAttention(cfg)
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = record(self, "input", x)  # (B, N1, C)
        residual1 = record(self, "residual_1", x + self.attn(x))  # (B, N1, C)
        h = record(self, "ln_1", self.ln_1(residual1))  # (B, N1, C)
        residual2 = record(self, "residual_2", h + self.mlp(h))  # (B, N1, C)
        out = record(self, "ln_2", self.ln_2(residual2))  # (B, N1, C)
        return record(self, "output", out)  # (B, N1, C)


# ----------------------------------------------------------------------------- model


class ToyVisionTransformer(nn.Module):
    def __init__(self, cfg: ToyViTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.patch_embed = PatchEmbedding(cfg)
        self.class_token = nn.Parameter(torch.zeros(1, 1, cfg.d_model))
        self.pos_embedding = nn.Parameter(torch.zeros(1, cfg.n_patches + 1, cfg.d_model))
        self.blocks = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.n_layers))
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)
        name_modules(self)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        image = record(self, "image", image)  # (B, Ch, H, W), pixel intensities in [0, 1]
        B = image.size(0)
        x = self.patch_embed(image)  # (B, N, C)
        cls = record(self, "cls_token", self.class_token.expand(B, -1, -1))  # (1, 1, C) -> (B, 1, C)
        x = record(self, "tokens", torch.cat([cls, x], dim=1))  # (B, N1, C)
        x = record(self, "tokens_pos", x + self.pos_embedding)  # (B, N1, C): x⁰
        for block in self.blocks:
            x = block(x)  # (B, N1, C)
        cls_rep = record(self, "cls_rep", x[:, 0])  # (B, C): only [CLS] feeds the head (post-norm: already normalised)
        logits = record(self, "logits", self.head(cls_rep))  # (B, K)
        record(self, "probs", logits.softmax(dim=-1))  # (B, K)
        return logits
