"""A Vision Transformer small enough to check with a pencil: seed 004's 6×6 walkthrough, computed for real.

The architecture of "An Image is Worth 16x16 Words" (Dosovitskiy et al., 2021) at the sizes of the seed's
worked example: a 6×6 grayscale image, 2×2 patches (nine of them, A to I, row by row), model width 4, one
encoder layer with one attention head, an MLP of width 8, three classes (cat, dog, bird).

Where this model follows the seed rather than the paper, it says so here and on the report's pages: its encoder layer
is post-norm (Add & Norm after each sub-layer), as the seed draws it (the paper's ViT normalises before each sub-layer
and at the end), and its MLP uses ReLU, as the seed's arithmetic does (the paper: GELU). Where the seed departs from
the paper, this model keeps the paper: attention divides the scores by √hs, which the seed skips, so its "raw scores"
are recorded too (``attn.dots``). The patch projection E has no bias in both (the paper's equation 1).
Shape legend, used in every comment and record point of this file (``LEGEND`` at the end reads it; the pages show it):
    B   batch size (1 image)
    Ch  colour channels (1: grayscale)
    H   image height
    W   image width
    P   patch size
    N   patches A–I, (H/P)·(W/P)
    N1  tokens, [CLS] + N
    C   model width
    h   attention heads
    hs  head size C / h
    M   MLP width
    K   classes (cat, dog, bird)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_trace.models.recording import Point, Role, name_modules, record


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


# ----------------------------------------------------------------------------- leaf modules


class PatchEmbedding(nn.Module):
    """Cut the image into P x P patches, flatten each row by row, and multiply it by E (no bias)."""

    PATCHES = Point("patches", ("B", "N", "Ch", "P", "P"),
                    "the image cut into P×P patches, row by row over the grid (A, B, C on top)")
    FLAT = Point("flat", ("B", "N", "Ch·P·P"), "each patch read left to right, top to bottom")
    EMBED = Point("embed", ("B", "N", "C"), "patch embeddings flat·E, no bias")

    def __init__(self, cfg: ToyViTConfig) -> None:
        super().__init__()
        self.patch_size = cfg.patch_size
        self.proj = nn.Linear(cfg.in_channels * cfg.patch_size**2, cfg.d_model, bias=False)  # weight = Eᵀ

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        B, Ch, H, W = image.shape
        P = self.patch_size
        grid = image.unfold(2, P, P).unfold(3, P, P)  # (B, Ch, H/P, W/P, P, P)
        patches = grid.permute(0, 2, 3, 1, 4, 5).reshape(B, -1, Ch, P, P)  # (B, N, Ch, P, P): A, B, C in the top row
        patches = record(self, self.PATCHES, patches)
        flat = record(self, self.FLAT, patches.flatten(2))  # (B, N, Ch*P*P): left to right, top to bottom
        return record(self, self.EMBED, self.proj(flat))  # (B, N, C) = flat @ E


class SelfAttention(nn.Module):
    """Scaled dot-product self-attention with separate q, k, v and output projections, written out step by step."""

    _HEADS_NOTE = "per head, as the ViT's q/k/v"
    Q = Point("q", ("B", "h", "N1", "hs"), "queries x·W_qᵀ + b, split into h heads", note=_HEADS_NOTE,
              role=Role.QUERIES)
    K = Point("k", ("B", "h", "N1", "hs"), "keys x·W_kᵀ + b, split into heads", note=_HEADS_NOTE,
              role=Role.KEYS)
    V = Point("v", ("B", "h", "N1", "hs"), "values x·W_vᵀ + b, split into heads", note=_HEADS_NOTE,
              role=Role.VALUES)
    DOTS = Point("dots", ("B", "h", "N1", "N1"), "raw dot products Q·Kᵀ, before the scaling (the seed's 'raw scores')",
                 note="the ViT records only the scaled scores")
    SCORES = Point("scores", ("B", "h", "N1", "N1"), "attention scores Q·Kᵀ/√hs, per head")
    PROBS = Point("probs", ("B", "h", "N1", "N1"),
                  "attention weights: softmax of the scores over the keys, rows sum to 1", role=Role.ATTENTION_WEIGHTS)
    CONTEXT = Point("context", ("B", "h", "N1", "hs"), "each head's weighted sum of values, probs·V")
    CONCAT = Point("concat", ("B", "N1", "C"), "the heads' contexts side by side")
    OUT = Point("out", ("B", "N1", "C"), "the output projection concat·W_projᵀ + b")

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
        # (B, N1, C) -> (B, N1, h, hs) -> (B, h, N1, hs)
        q = record(self, self.Q, self.query(x).view(B, N1, h, C // h).transpose(1, 2))
        # (B, N1, C) -> (B, N1, h, hs) -> (B, h, N1, hs)
        k = record(self, self.K, self.key(x).view(B, N1, h, C // h).transpose(1, 2))
        # (B, N1, C) -> (B, N1, h, hs) -> (B, h, N1, hs)
        v = record(self, self.V, self.value(x).view(B, N1, h, C // h).transpose(1, 2))
        dots = record(self, self.DOTS, q @ k.transpose(-2, -1))  # (B, h, N1, N1): the seed's "raw scores"
        scores = record(self, self.SCORES, dots / math.sqrt(C // h))  # (B, h, N1, N1)
        probs = record(self, self.PROBS, scores.softmax(dim=-1))  # (B, h, N1, N1), rows sum to 1
        context = record(self, self.CONTEXT, probs @ v)  # (B, h, N1, hs): each row a weighted sum of value rows
        # (B, h, N1, hs) -> (B, N1, h, hs) -> (B, N1, C)
        concat = record(self, self.CONCAT, context.transpose(1, 2).reshape(B, N1, C))
        return record(self, self.OUT, self.proj(concat))  # (B, N1, C)


class MLP(nn.Module):
    """FFN(x) = ReLU(x W₁ + b₁) W₂ + b₂, as the seed writes it."""

    FC1 = Point("fc1", ("B", "N1", "M"), "first linear layer x·W₁ + b₁, before the activation")
    HIDDEN = Point("hidden", ("B", "N1", "M"), "ReLU of fc1", note="the ViT uses GELU here")
    OUT = Point("out", ("B", "N1", "C"), "second linear layer hidden·W₂ + b₂")

    def __init__(self, cfg: ToyViTConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.mlp_dim)
        self.fc2 = nn.Linear(cfg.mlp_dim, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre_activation = record(self, self.FC1, self.fc1(x))  # (B, N1, M)
        hidden = record(self, self.HIDDEN, F.relu(pre_activation))  # (B, N1, M)
        return record(self, self.OUT, self.fc2(hidden))  # (B, N1, C)


# ----------------------------------------------------------------------------- block


class EncoderBlock(nn.Module):
    """Post-norm, as the seed draws it: LN(x + Attention(x)), then LN(. + MLP(.))."""

    _POST_NORM = "post-norm: the ViT's pre-norm block normalises before each sub-layer instead"
    INPUT = Point("input", ("B", "N1", "C"), "the sequence entering the layer")
    RESIDUAL_1 = Point("residual_1", ("B", "N1", "C"), "input + attention output", role=Role.RESIDUAL_SUM)
    LN_1 = Point("ln_1", ("B", "N1", "C"), "LayerNorm of residual_1 (the first Add & Norm): what the MLP reads",
                 note=_POST_NORM)
    RESIDUAL_2 = Point("residual_2", ("B", "N1", "C"), "ln_1 + MLP output", role=Role.RESIDUAL_SUM)
    LN_2 = Point("ln_2", ("B", "N1", "C"), "LayerNorm of residual_2 (the second Add & Norm)", note=_POST_NORM)
    OUTPUT = Point("output", ("B", "N1", "C"), "the sequence leaving the layer, x¹ (ln_2)", role=Role.LAYER_OUTPUT)

    def __init__(self, cfg: ToyViTConfig) -> None:
        super().__init__()
        self.attn = SelfAttention(cfg)
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = record(self, self.INPUT, x)  # (B, N1, C)
        residual1 = record(self, self.RESIDUAL_1, x + self.attn(x))  # (B, N1, C)
        h = record(self, self.LN_1, self.ln_1(residual1))  # (B, N1, C)
        residual2 = record(self, self.RESIDUAL_2, h + self.mlp(h))  # (B, N1, C)
        out = record(self, self.LN_2, self.ln_2(residual2))  # (B, N1, C)
        return record(self, self.OUTPUT, out)  # (B, N1, C)


# ----------------------------------------------------------------------------- model


class ToyVisionTransformer(nn.Module):
    IMAGE = Point("image", ("B", "Ch", "H", "W"), "the input image, pixel intensities in [0, 1]")
    CLS_TOKEN = Point("cls_token", ("B", "1", "C"), "the learned [CLS] token, one per image")
    TOKENS = Point("tokens", ("B", "N1", "C"), "[CLS] followed by the patch embeddings")
    TOKENS_POS = Point("tokens_pos", ("B", "N1", "C"), "tokens plus learned position embeddings: x⁰, entering layer 1")
    CLS_REP = Point("cls_rep", ("B", "C"), "the [CLS] row of the last layer's output: the image's representation")
    LOGITS = Point("logits", ("B", "K"), "class scores")
    PROBS = Point("probs", ("B", "K"), "softmax of the logits: the class distribution")

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
        image = record(self, self.IMAGE, image)  # (B, Ch, H, W), pixel intensities in [0, 1]
        B = image.size(0)
        x = self.patch_embed(image)  # (B, N, C)
        cls = record(self, self.CLS_TOKEN, self.class_token.expand(B, -1, -1))  # (1, 1, C) -> (B, 1, C)
        x = record(self, self.TOKENS, torch.cat([cls, x], dim=1))  # (B, N1, C)
        x = record(self, self.TOKENS_POS, x + self.pos_embedding)  # (B, N1, C): x⁰
        for block in self.blocks:
            x = block(x)  # (B, N1, C)
        # (B, C): only [CLS] feeds the head (post-norm: already normalised)
        cls_rep = record(self, self.CLS_REP, x[:, 0])
        logits = record(self, self.LOGITS, self.head(cls_rep))  # (B, K)
        record(self, self.PROBS, logits.softmax(dim=-1))  # (B, K)
        return logits


# ----------------------------------------------------------------------------- shape legend
# Read from the docstring's table; below the code, so that declaring it moved no line the report pages quote.

from transformer_trace.models.legend import Legend, Offset, Quotient  # noqa: E402

LEGEND = Legend.parse(__doc__, relations=(Quotient("hs", "C", "h"), Offset("N1", "N", 1)))
