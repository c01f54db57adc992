"""The Vision Transformer of "An Image is Worth 16x16 Words" (Dosovitskiy et al., 2021).

Standard pre-norm ViT with the module layout of torchvision's VisionTransformer, so its
weights (e.g. vit_b_16 IMAGENET1K_V1) load unchanged through ``from_torchvision``.
Every intermediate of the seed report's snapshots S01-S26 is a real tensor here:
patches are cut with ``unfold`` and projected by a linear layer (torchvision's
16x16 stride-16 convolution is the same map), and attention is written out as
q/k/v per head, scores, probabilities and context.

Shape legend, used in every comment of this file:
    B   batch size
    Ch  colour channels (3); H, W image height and width
    P   patch size (pixels per side)
    N   number of patches, (H / P) * (W / P); N1 = N + 1 tokens with [CLS]
    C   model width (hidden_dim)
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

from models.recording import is_recording, name_modules, record


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


# ----------------------------------------------------------------------------- record points


def record_points(cfg: ViTConfig) -> dict[str, tuple[str, ...]]:
    """Every name a recorded forward pass stores, with its shape in the legend's letters, in computation order.

    Declared up front (as TransformerLens declares its hook points), so a report's catalogue
    can be checked against the model without running it.
    """
    points: dict[str, tuple[str, ...]] = {
        "image": ("B", "Ch", "H", "W"), "patch_embed.patches": ("B", "N", "Ch", "P", "P"),
        "patch_embed.flat": ("B", "N", "Ch·P·P"), "patch_embed.embed": ("B", "N", "C"),
        "cls_token": ("B", "1", "C"), "tokens": ("B", "N1", "C"), "tokens_pos": ("B", "N1", "C"),
    }
    for i in range(cfg.n_layers):
        block = f"blocks.{i}"
        points |= {f"{block}.input": ("B", "N1", "C"), f"{block}.ln_1": ("B", "N1", "C")}
        points |= {f"{block}.attn.{name}": ("B", "h", "N1", "hs") for name in ("q", "k", "v")}
        points |= {f"{block}.attn.scores": ("B", "h", "N1", "N1"), f"{block}.attn.probs": ("B", "h", "N1", "N1"),
                   f"{block}.attn.context": ("B", "h", "N1", "hs"), f"{block}.attn.concat": ("B", "N1", "C"),
                   f"{block}.attn.out": ("B", "N1", "C"), f"{block}.residual_1": ("B", "N1", "C"),
                   f"{block}.ln_2": ("B", "N1", "C"), f"{block}.mlp.fc1": ("B", "N1", "M"),
                   f"{block}.mlp.hidden": ("B", "N1", "M"), f"{block}.mlp.out": ("B", "N1", "C"),
                   f"{block}.residual_2": ("B", "N1", "C"), f"{block}.output": ("B", "N1", "C")}
    points |= {"final_seq": ("B", "N1", "C"), "cls_rep": ("B", "C"), "logits": ("B", "K"), "probs": ("B", "K")}
    return points


# ----------------------------------------------------------------------------- leaf modules


class PatchEmbedding(nn.Module):
    """Cut the image into P x P patches, flatten each, and project it to C features."""

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.patch_size = cfg.patch_size
        self.proj = nn.Linear(cfg.in_channels * cfg.patch_size**2, cfg.d_model)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        B, Ch, H, W = image.shape
        P = self.patch_size
        grid = image.unfold(2, P, P).unfold(3, P, P)  # (B, Ch, H/P, W/P, P, P)
        patches = grid.permute(0, 2, 3, 1, 4, 5).reshape(B, -1, Ch, P, P)  # (B, N, Ch, P, P), row-major over the grid
        patches = record(self, "patches", patches)
        flat = record(self, "flat", patches.flatten(2))  # (B, N, Ch*P*P), channel-major like a conv kernel
        return record(self, "embed", self.proj(flat))  # (B, N, C)


class SelfAttention(nn.Module):
    """Multi-head self-attention with one fused q/k/v projection (as nn.MultiheadAttention)."""

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
            return self.proj(context.transpose(1, 2).reshape(B, N1, C))  # (B, h, N1, hs) -> (B, N1, h, hs) -> (B, N1, C)
        q = record(self, "q", q)
        k = record(self, "k", k)
        v = record(self, "v", v)
        scores = record(self, "scores", q @ k.transpose(-2, -1) / math.sqrt(C // h))  # (B, h, N1, N1)
        probs = record(self, "probs", scores.softmax(dim=-1))  # (B, h, N1, N1), rows sum to 1
        context = record(self, "context", probs @ v)  # (B, h, N1, hs)
        concat = record(self, "concat", context.transpose(1, 2).reshape(B, N1, C))  # (B, h, N1, hs) -> (B, N1, h, hs) -> (B, N1, C)
        return record(self, "out", self.proj(concat))  # (B, N1, C)


class MLP(nn.Module):
    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.mlp_dim)
        self.fc2 = nn.Linear(cfg.mlp_dim, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre_activation = record(self, "fc1", self.fc1(x))  # (B, N1, M)
        hidden = record(self, "hidden", F.gelu(pre_activation))  # (B, N1, M)
        return record(self, "out", self.fc2(hidden))  # (B, N1, C)


# ----------------------------------------------------------------------------- block


class EncoderBlock(nn.Module):
    """Pre-norm: x + Attention(LN(x)), then + MLP(LN(.)); no LayerNorm on the residual stream itself."""

    def __init__(self, cfg: ViTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.attn = SelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = record(self, "input", x)  # (B, N1, C)
        attn_in = record(self, "ln_1", self.ln_1(x))  # (B, N1, C)
        residual1 = record(self, "residual_1", x + self.attn(attn_in))  # (B, N1, C)
        mlp_in = record(self, "ln_2", self.ln_2(residual1))  # (B, N1, C)
        residual2 = record(self, "residual_2", residual1 + self.mlp(mlp_in))  # (B, N1, C)
        return record(self, "output", residual2)  # (B, N1, C)


# ----------------------------------------------------------------------------- model


class VisionTransformer(nn.Module):
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
        image = record(self, "image", image)  # (B, 3, H, W), normalised
        B = image.size(0)
        x = self.patch_embed(image)  # (B, N, C)
        cls = record(self, "cls_token", self.class_token.expand(B, -1, -1))  # (1, 1, C) -> (B, 1, C)
        x = record(self, "tokens", torch.cat([cls, x], dim=1))  # (B, N1, C)
        x = record(self, "tokens_pos", x + self.pos_embedding)  # (B, N1, C)
        for block in self.blocks:
            x = block(x)  # (B, N1, C)
        x = record(self, "final_seq", self.ln(x))  # (B, N1, C)
        cls_rep = record(self, "cls_rep", x[:, 0])  # (B, C): only [CLS] feeds the head
        logits = record(self, "logits", self.head(cls_rep))  # (B, K)
        record(self, "probs", logits.softmax(dim=-1))  # (B, K)
        return logits


# ----------------------------------------------------------------------------- torchvision


def config_from_torchvision(tv_model: nn.Module) -> ViTConfig:
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


def from_torchvision(tv_model: nn.Module) -> VisionTransformer:
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
