"""The Vision Transformer of "An Image is Worth 16x16 Words" (Dosovitskiy et al., 2021).

Standard pre-norm ViT with the module layout of torchvision's VisionTransformer, so its weights (e.g. vit_b_16
IMAGENET1K_V1) load unchanged through ``from_torchvision``. Every intermediate of the seed report's snapshots S01-S26
is a real tensor here: patches are cut with ``unfold`` and projected by a linear layer (torchvision's 16x16 stride-16
convolution is the same map), and attention is written out as q/k/v per head, scores, probabilities and context.

Shape legend, used in every comment of this file (``LEGEND`` at the end reads it; the report's pages show it):
    B   batch size
    Ch  colour channels (3)
    H   image height
    W   image width
    P   patch size
    N   patches, (H/P)·(W/P)
    N1  tokens, N + 1 with [CLS]
    C   model width
    h   attention heads
    hs  head size C / h
    M   MLP width
    K   classes

Each module declares the tensors it records as ``Point`` class attributes, with their shapes in these symbols.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_trace.models.recording import Point, Role, is_recording, name_modules, record


@dataclass(frozen=True)
class ViTConfig:
    image_size: int = 224
    patch_size: int = 16
    in_channels: int = 3
    d_model: int = 768
    n_heads: int = 12
    mlp_dim: int = 3072
    n_layers: int = 12
    n_classes: int = 1000
    layer_norm_eps: float = 1e-6  # as torchvision's ViT

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


PRESETS: dict[str, ViTConfig] = {
    "b16": ViTConfig(),
    "b16-384": ViTConfig(image_size=384),
    "l16": ViTConfig(d_model=1024, n_heads=16, mlp_dim=4096, n_layers=24),
    # ViT-Tiny of seed 003: 32x32 CIFAR-10 images, 4x4 patches.
    "tiny": ViTConfig(image_size=32, patch_size=4, d_model=192, n_heads=3, mlp_dim=768, n_layers=6, n_classes=10),
}


# ----------------------------------------------------------------------------- leaf modules


class PatchEmbedding(nn.Module):
    """Cut the image into P x P patches, flatten each, and project it to C features."""

    PATCHES = Point("patches", ("B", "N", "Ch", "P", "P"), "the image cut into P×P patches, row-major over the grid")
    FLAT = Point("flat", ("B", "N", "Ch·P·P"), "each patch flattened channel-major, like a convolution kernel")
    EMBED = Point("embed", ("B", "N", "C"), "patch embeddings flat·Wᵀ + b (torchvision's stride-P convolution)")

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.patch_size = cfg.patch_size
        self.proj = nn.Linear(cfg.in_channels * cfg.patch_size**2, cfg.d_model)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        B, Ch, H, W = image.shape
        P = self.patch_size
        grid = image.unfold(2, P, P).unfold(3, P, P)  # (B, Ch, H/P, W/P, P, P)
        patches = grid.permute(0, 2, 3, 1, 4, 5).reshape(B, -1, Ch, P, P)  # (B, N, Ch, P, P), row-major over the grid
        patches = record(self, self.PATCHES, patches)
        flat = record(self, self.FLAT, patches.flatten(2))  # (B, N, Ch*P*P), channel-major like a conv kernel
        return record(self, self.EMBED, self.proj(flat))  # (B, N, C)


class SelfAttention(nn.Module):
    """Multi-head self-attention with one fused q/k/v projection (as nn.MultiheadAttention)."""

    _HEADS_NOTE = ("per head, as the encoder–decoder's q_heads/k_heads/v_heads "
                   "(its q is the projection before the split)")
    Q = Point("q", ("B", "h", "N1", "hs"), "queries, the first third of the fused projection split into h heads",
              note=_HEADS_NOTE, role=Role.QUERIES)
    K = Point("k", ("B", "h", "N1", "hs"), "keys, the second third of the fused projection split into heads",
              note=_HEADS_NOTE, role=Role.KEYS)
    V = Point("v", ("B", "h", "N1", "hs"), "values, the last third of the fused projection split into heads",
              note=_HEADS_NOTE, role=Role.VALUES)
    SCORES = Point("scores", ("B", "h", "N1", "N1"), "attention scores Q·Kᵀ/√hs, per head")
    PROBS = Point("probs", ("B", "h", "N1", "N1"),
                  "attention weights: softmax of the scores over the keys, rows sum to 1", role=Role.ATTENTION_WEIGHTS)
    CONTEXT = Point("context", ("B", "h", "N1", "hs"), "each head's weighted sum of values, probs·V")
    CONCAT = Point("concat", ("B", "N1", "C"), "the heads' contexts side by side")
    OUT = Point("out", ("B", "N1", "C"), "the output projection concat·W_projᵀ + b")

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N1, C = x.shape
        h = self.n_heads
        qkv = self.qkv(x).view(B, N1, 3, h, C // h).permute(2, 0, 3, 1, 4)  # (B, N1, 3C) -> (3, B, h, N1, hs)
        q, k, v = qkv.unbind(0)  # each (B, h, N1, hs)
        if not is_recording():
            # Same function as the explicit steps below, fused into one kernel (as torchvision's
            # nn.MultiheadAttention does); nothing asks for the intermediate scores here.
            context = F.scaled_dot_product_attention(q, k, v)  # (B, h, N1, hs)
            # (B, h, N1, hs) -> (B, N1, h, hs) -> (B, N1, C)
            return self.proj(context.transpose(1, 2).reshape(B, N1, C))
        q = record(self, self.Q, q)
        k = record(self, self.K, k)
        v = record(self, self.V, v)
        scores = record(self, self.SCORES, q @ k.transpose(-2, -1) / math.sqrt(C // h))  # (B, h, N1, N1)
        probs = record(self, self.PROBS, scores.softmax(dim=-1))  # (B, h, N1, N1), rows sum to 1
        context = record(self, self.CONTEXT, probs @ v)  # (B, h, N1, hs)
        # (B, h, N1, hs) -> (B, N1, h, hs) -> (B, N1, C)
        concat = record(self, self.CONCAT, context.transpose(1, 2).reshape(B, N1, C))
        return record(self, self.OUT, self.proj(concat))  # (B, N1, C)


class MLP(nn.Module):
    """Position-wise Linear(C->M), exact GELU, Linear(M->C)."""

    FC1 = Point("fc1", ("B", "N1", "M"), "first linear layer x·W₁ᵀ + b₁, before the activation")
    HIDDEN = Point("hidden", ("B", "N1", "M"), "exact GELU of fc1")
    OUT = Point("out", ("B", "N1", "C"), "second linear layer hidden·W₂ᵀ + b₂")

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.mlp_dim)
        self.fc2 = nn.Linear(cfg.mlp_dim, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre_activation = record(self, self.FC1, self.fc1(x))  # (B, N1, M)
        hidden = record(self, self.HIDDEN, F.gelu(pre_activation))  # (B, N1, M)
        return record(self, self.OUT, self.fc2(hidden))  # (B, N1, C)


# ----------------------------------------------------------------------------- block


class EncoderBlock(nn.Module):
    """Pre-norm: x + Attention(LN(x)), then + MLP(LN(.)); no LayerNorm on the residual stream itself."""

    INPUT = Point("input", ("B", "N1", "C"), "the residual stream entering the block")
    LN_1 = Point("ln_1", ("B", "N1", "C"), "LayerNorm of the input: what attention reads (pre-norm)")
    RESIDUAL_1 = Point("residual_1", ("B", "N1", "C"), "input + attention output", role=Role.RESIDUAL_SUM)
    LN_2 = Point("ln_2", ("B", "N1", "C"), "LayerNorm of residual_1: what the MLP reads")
    RESIDUAL_2 = Point("residual_2", ("B", "N1", "C"), "residual_1 + MLP output", role=Role.RESIDUAL_SUM)
    OUTPUT = Point("output", ("B", "N1", "C"),
                   "the residual stream leaving the block (residual_2; no LayerNorm after it)", role=Role.LAYER_OUTPUT)

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.attn = SelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = record(self, self.INPUT, x)  # (B, N1, C)
        attn_in = record(self, self.LN_1, self.ln_1(x))  # (B, N1, C)
        residual1 = record(self, self.RESIDUAL_1, x + self.attn(attn_in))  # (B, N1, C)
        mlp_in = record(self, self.LN_2, self.ln_2(residual1))  # (B, N1, C)
        residual2 = record(self, self.RESIDUAL_2, residual1 + self.mlp(mlp_in))  # (B, N1, C)
        return record(self, self.OUTPUT, residual2)  # (B, N1, C)


# ----------------------------------------------------------------------------- model


class VisionTransformer(nn.Module):
    IMAGE = Point("image", ("B", "Ch", "H", "W"), "the input image, resized and normalised")
    CLS_TOKEN = Point("cls_token", ("B", "1", "C"), "the learned [CLS] token, one per image")
    TOKENS = Point("tokens", ("B", "N1", "C"), "[CLS] followed by the patch embeddings")
    TOKENS_POS = Point("tokens_pos", ("B", "N1", "C"),
                       "tokens plus learned position embeddings: the residual stream entering block 1")
    FINAL_SEQ = Point("final_seq", ("B", "N1", "C"), "the final LayerNorm of the residual stream",
                      note="the seed report's name for what the GPT calls ln_f")
    CLS_REP = Point("cls_rep", ("B", "C"), "the [CLS] row of final_seq: the image's representation")
    LOGITS = Point("logits", ("B", "K"), "class scores")
    PROBS = Point("probs", ("B", "K"), "softmax of the logits: the class distribution")

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.patch_embed = PatchEmbedding(cfg)
        self.class_token = nn.Parameter(torch.zeros(1, 1, cfg.d_model))
        self.pos_embedding = nn.Parameter(torch.zeros(1, cfg.n_patches + 1, cfg.d_model))
        self.blocks = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.n_layers))
        self.ln = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)
        nn.init.trunc_normal_(self.class_token, std=0.02)
        nn.init.trunc_normal_(self.pos_embedding, std=0.02)
        name_modules(self)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        image = record(self, self.IMAGE, image)  # (B, 3, H, W), normalised
        B = image.size(0)
        x = self.patch_embed(image)  # (B, N, C)
        cls = record(self, self.CLS_TOKEN, self.class_token.expand(B, -1, -1))  # (1, 1, C) -> (B, 1, C)
        x = record(self, self.TOKENS, torch.cat([cls, x], dim=1))  # (B, N1, C)
        x = record(self, self.TOKENS_POS, x + self.pos_embedding)  # (B, N1, C)
        for block in self.blocks:
            x = block(x)  # (B, N1, C)
        x = record(self, self.FINAL_SEQ, self.ln(x))  # (B, N1, C)
        cls_rep = record(self, self.CLS_REP, x[:, 0])  # (B, C): only [CLS] feeds the head
        logits = record(self, self.LOGITS, self.head(cls_rep))  # (B, K)
        record(self, self.PROBS, logits.softmax(dim=-1))  # (B, K)
        return logits


# ----------------------------------------------------------------------------- torchvision
# Below the code the report pages quote: the import moved none of their lines.

import typing  # noqa: E402

if typing.TYPE_CHECKING:  # torchvision declares no types: its model's sizes are read as it sets them
    from torchvision.models import VisionTransformer as TorchvisionViT


def config_from_torchvision(tv_model: TorchvisionViT) -> ViTConfig:
    first = tv_model.encoder.layers[0]
    return ViTConfig(
        image_size=tv_model.image_size,
        patch_size=tv_model.patch_size,
        d_model=tv_model.hidden_dim,
        n_heads=first.self_attention.num_heads,
        mlp_dim=tv_model.mlp_dim,
        n_layers=len(tv_model.encoder.layers),
        n_classes=tv_model.heads.head.out_features,
        layer_norm_eps=first.ln_1.eps,
    )


def from_torchvision(tv_model: TorchvisionViT) -> VisionTransformer:
    """Our ViT with the weights of a torchvision VisionTransformer (e.g. vit_b_16)."""
    if not hasattr(tv_model, "heads") or not hasattr(tv_model.heads, "head"):
        raise ValueError("expected a torchvision VisionTransformer with a single linear head (heads.head)")
    cfg = config_from_torchvision(tv_model)
    model = VisionTransformer(cfg)
    src = tv_model.state_dict()
    state = {
        "patch_embed.proj.weight": src["conv_proj.weight"].reshape(cfg.d_model, -1),  # (C, 3, P, P) -> (C, 3*P*P)
        "patch_embed.proj.bias": src["conv_proj.bias"],
        "class_token": src["class_token"],
        "pos_embedding": src["encoder.pos_embedding"],
        "ln.weight": src["encoder.ln.weight"],
        "ln.bias": src["encoder.ln.bias"],
        "head.weight": src["heads.head.weight"],
        "head.bias": src["heads.head.bias"],
    }
    for i in range(cfg.n_layers):
        theirs, ours = f"encoder.layers.encoder_layer_{i}", f"blocks.{i}"
        for tv_name, our_name in (
            ("ln_1", "ln_1"), ("ln_2", "ln_2"),
            ("self_attention.out_proj", "attn.proj"),
            ("mlp.0", "mlp.fc1"), ("mlp.3", "mlp.fc2"),
        ):
            state[f"{ours}.{our_name}.weight"] = src[f"{theirs}.{tv_name}.weight"]
            state[f"{ours}.{our_name}.bias"] = src[f"{theirs}.{tv_name}.bias"]
        state[f"{ours}.attn.qkv.weight"] = src[f"{theirs}.self_attention.in_proj_weight"]  # (3C, C): q, k, v stacked
        state[f"{ours}.attn.qkv.bias"] = src[f"{theirs}.self_attention.in_proj_bias"]
    model.load_state_dict(state)
    return model


# ----------------------------------------------------------------------------- shape legend
# Read from the docstring's table; below the code, so that declaring it moved no line the report pages quote.

from transformer_trace.models.legend import Legend, Offset, Quotient  # noqa: E402

LEGEND = Legend.parse(__doc__, relations=(Quotient("hs", "C", "h"), Offset("N1", "N", 1)))
