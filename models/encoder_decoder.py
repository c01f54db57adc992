"""The encoder–decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017).

Sizes default to the traced model of seed report 001: 2 encoder and 2 decoder
layers, 4 heads, d_model 128, d_ff 256, post-norm (LayerNorm after each residual
sum), ReLU feed-forward, sinusoidal positions added to the token embeddings, and
a linear projection to the target vocabulary. No dropout: the report traces one
deterministic forward pass.

Shape legend, used in every comment of this file:
    B   batch size
    S   source length (tokens)
    T   target length (tokens)
    C   model width, d_model
    F   feed-forward width, d_ff
    h   number of attention heads
    hs  head size, C // h
    V   target vocabulary size
    V_src source vocabulary size
    L   S or T, in modules the encoder and decoder share
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from models.recording import name_modules, record


@dataclass(frozen=True)
class EncoderDecoderConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 128
    n_heads: int = 4
    d_ff: int = 256
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    max_len: int = 512  # longest sentence the positional table covers
    layer_norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")

    @property
    def head_size(self) -> int:
        return self.d_model // self.n_heads


# ----------------------------------------------------------------------------- record points


def _attention_points(prefix: str, q_len: str, kv_len: str, masked: bool) -> dict[str, tuple[str, ...]]:
    points = {
        f"{prefix}.q": ("B", q_len, "C"), f"{prefix}.k": ("B", kv_len, "C"), f"{prefix}.v": ("B", kv_len, "C"),
        f"{prefix}.q_heads": ("B", "h", q_len, "hs"), f"{prefix}.k_heads": ("B", "h", kv_len, "hs"),
        f"{prefix}.v_heads": ("B", "h", kv_len, "hs"), f"{prefix}.scores": ("B", "h", q_len, kv_len),
    }
    if masked:
        points[f"{prefix}.masked_scores"] = ("B", "h", q_len, kv_len)
    points |= {f"{prefix}.probs": ("B", "h", q_len, kv_len), f"{prefix}.context": ("B", "h", q_len, "hs"),
               f"{prefix}.concat": ("B", q_len, "C"), f"{prefix}.out": ("B", q_len, "C")}
    return points


def _mlp_points(prefix: str, length: str) -> dict[str, tuple[str, ...]]:
    return {f"{prefix}.input": ("B", length, "C"), f"{prefix}.fc1": ("B", length, "F"),
            f"{prefix}.hidden": ("B", length, "F"), f"{prefix}.out": ("B", length, "C")}


def record_points(cfg: EncoderDecoderConfig) -> dict[str, tuple[str, ...]]:
    """Every name a recorded forward pass stores, with its shape in the legend's letters, in computation order.

    Declared up front (as TransformerLens declares its hook points), so a report's catalogue
    can be checked against the model without running it.
    """
    points: dict[str, tuple[str, ...]] = {
        "src_ids": ("B", "S"), "src_emb_weight": ("V_src", "C"), "src_embed": ("B", "S", "C"), "src_with_pos": ("B", "S", "C"),
    }
    for i in range(cfg.n_encoder_layers):
        layer = f"encoder.layers.{i}"
        points[f"{layer}.input"] = ("B", "S", "C")
        points |= _attention_points(f"{layer}.self_attn", "S", "S", masked=False)
        points |= {f"{layer}.residual_1": ("B", "S", "C"), f"{layer}.ln_1": ("B", "S", "C")}
        points |= _mlp_points(f"{layer}.mlp", "S")
        points |= {f"{layer}.residual_2": ("B", "S", "C"), f"{layer}.output": ("B", "S", "C")}
    points |= {"memory": ("B", "S", "C"), "tgt_ids": ("B", "T"), "tgt_embed": ("B", "T", "C"),
               "tgt_with_pos": ("B", "T", "C"), "tgt_mask": ("1", "1", "T", "T")}
    for i in range(cfg.n_decoder_layers):
        layer = f"decoder.layers.{i}"
        points[f"{layer}.input"] = ("B", "T", "C")
        points |= _attention_points(f"{layer}.self_attn", "T", "T", masked=True)
        points |= {f"{layer}.residual_1": ("B", "T", "C"), f"{layer}.ln_1": ("B", "T", "C")}
        points |= _attention_points(f"{layer}.cross_attn", "T", "S", masked=False)
        points |= {f"{layer}.residual_2": ("B", "T", "C"), f"{layer}.ln_2": ("B", "T", "C")}
        points |= _mlp_points(f"{layer}.mlp", "T")
        points |= {f"{layer}.residual_3": ("B", "T", "C"), f"{layer}.output": ("B", "T", "C")}
    points |= {"dec_final": ("B", "T", "C"), "logits": ("B", "T", "V")}
    return points


# ----------------------------------------------------------------------------- vocabulary


def build_vocab(sentence: str) -> dict[str, int]:
    """Each distinct whitespace-separated word, sorted, numbered from 0."""
    return {word: i for i, word in enumerate(sorted(set(sentence.split())))}


def encode(sentence: str, vocab: dict[str, int]) -> list[int]:
    return [vocab[word] for word in sentence.split()]


# ----------------------------------------------------------------------------- leaf modules


class SinusoidalPositionalEncoding(nn.Module):
    """Adds PE[pos, 2i] = sin(pos / 10000^(2i/C)), PE[pos, 2i+1] = cos(same angle)."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (max_len, 1)
        inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        table = torch.zeros(max_len, d_model)
        table[:, 0::2] = torch.sin(position * inv_freq)
        table[:, 1::2] = torch.cos(position * inv_freq)
        self.register_buffer("table", table, persistent=False)  # (max_len, C)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B, L, C); the table row for each position is broadcast over the batch
        encoding = self.table[: x.size(1)]  # (L, C)
        return x + encoding


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over h heads; queries from x_q, keys and values from x_kv."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.head_size = d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, L, C = x.shape
        return x.view(B, L, self.n_heads, self.head_size).transpose(1, 2)  # (B, L, C) -> (B, L, h, hs) -> (B, h, L, hs)

    def forward(self, x_q: torch.Tensor, x_kv: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        # x_q: (B, T, C) asks; x_kv: (B, S, C) answers (S = T in self-attention)
        B, T, C = x_q.shape
        q = record(self, "q", self.W_q(x_q))  # (B, T, C)
        k = record(self, "k", self.W_k(x_kv))  # (B, S, C)
        v = record(self, "v", self.W_v(x_kv))  # (B, S, C)
        q_heads = record(self, "q_heads", self.split_heads(q))  # (B, h, T, hs)
        k_heads = record(self, "k_heads", self.split_heads(k))  # (B, h, S, hs)
        v_heads = record(self, "v_heads", self.split_heads(v))  # (B, h, S, hs)
        scores = record(self, "scores", q_heads @ k_heads.transpose(-2, -1) / math.sqrt(self.head_size))  # (B, h, T, S)
        if mask is not None:
            # mask: (B or 1, 1, T, S), 0 where allowed and -inf where blocked
            scores = record(self, "masked_scores", scores + mask)  # (B, h, T, S)
        probs = record(self, "probs", F.softmax(scores, dim=-1))  # (B, h, T, S), rows sum to 1
        context = record(self, "context", probs @ v_heads)  # (B, h, T, hs)
        concat = record(self, "concat", context.transpose(1, 2).reshape(B, T, C))  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
        return record(self, "out", self.W_o(concat))  # (B, T, C)


class MLP(nn.Module):
    """Position-wise two-layer network: Linear(C->F), ReLU, Linear(F->C)."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = record(self, "input", x)  # (B, L, C)
        pre_activation = record(self, "fc1", self.fc1(x))  # (B, L, F)
        hidden = record(self, "hidden", F.relu(pre_activation))  # (B, L, F)
        return record(self, "out", self.fc2(hidden))  # (B, L, C)


# ----------------------------------------------------------------------------- blocks


class EncoderLayer(nn.Module):
    """x -> LayerNorm(x + SelfAttention(x)) -> LayerNorm(. + MLP(.)) (post-norm)."""

    def __init__(self, cfg: EncoderDecoderConfig) -> None:
        super().__init__()
        # Creation order fixes which random numbers each weight draws (seed report 001).
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads)
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg.d_model, cfg.d_ff)
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = record(self, "input", x)  # (B, S, C)
        attn_out = self.self_attn(x, x)  # (B, S, C)
        residual1 = record(self, "residual_1", x + attn_out)  # (B, S, C)
        x = record(self, "ln_1", self.ln_1(residual1))  # (B, S, C)
        mlp_out = self.mlp(x)  # (B, S, C)
        residual2 = record(self, "residual_2", x + mlp_out)  # (B, S, C)
        return record(self, "output", self.ln_2(residual2))  # (B, S, C)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output, feed-forward; each post-norm."""

    def __init__(self, cfg: EncoderDecoderConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads)
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads)
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg.d_model, cfg.d_ff)
        self.ln_3 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)

    def forward(self, y: torch.Tensor, memory: torch.Tensor, causal_mask: torch.Tensor) -> torch.Tensor:
        # y: (B, T, C) target states; memory: (B, S, C) last encoder layer's output
        y = record(self, "input", y)  # (B, T, C)
        self_out = self.self_attn(y, y, mask=causal_mask)  # (B, T, C)
        residual1 = record(self, "residual_1", y + self_out)  # (B, T, C)
        y = record(self, "ln_1", self.ln_1(residual1))  # (B, T, C)
        cross_out = self.cross_attn(y, memory)  # (B, T, C)
        residual2 = record(self, "residual_2", y + cross_out)  # (B, T, C)
        y = record(self, "ln_2", self.ln_2(residual2))  # (B, T, C)
        mlp_out = self.mlp(y)  # (B, T, C)
        residual3 = record(self, "residual_3", y + mlp_out)  # (B, T, C)
        return record(self, "output", self.ln_3(residual3))  # (B, T, C)


# ----------------------------------------------------------------------------- model


def causal_mask(T: int, device: torch.device | None = None) -> torch.Tensor:
    """(1, 1, T, T): 0 on and below the diagonal, -inf above (no peeking at later tokens)."""
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=1)  # (T, T)
    mask = torch.zeros(T, T, device=device).masked_fill(blocked, float("-inf"))  # (T, T)
    return mask.view(1, 1, T, T)  # (T, T) -> (1, 1, T, T), broadcast over batch and heads


class EncoderDecoderTransformer(nn.Module):
    def __init__(self, cfg: EncoderDecoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        # Parameters are created in the order of seed report 001 so that
        # torch.manual_seed(7) reproduces its printed values.
        self.src_emb = nn.Embedding(cfg.src_vocab_size, cfg.d_model)
        self.tgt_emb = nn.Embedding(cfg.tgt_vocab_size, cfg.d_model)
        self.pos = SinusoidalPositionalEncoding(cfg.d_model, cfg.max_len)
        self.encoder = nn.ModuleDict({"layers": nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))})
        self.decoder = nn.ModuleDict({"layers": nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))})
        self.out_proj = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)
        name_modules(self)

    def encode(self, src_ids: torch.Tensor) -> torch.Tensor:
        src_ids = record(self, "src_ids", src_ids)  # (B, S)
        record(self, "src_emb_weight", self.src_emb.weight)  # (V_src, C)
        x = record(self, "src_embed", self.src_emb(src_ids))  # (B, S, C)
        x = record(self, "src_with_pos", self.pos(x))  # (B, S, C)
        for layer in self.encoder["layers"]:
            x = layer(x)  # (B, S, C)
        return record(self, "memory", x)  # (B, S, C)

    def decode(self, tgt_ids: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        tgt_ids = record(self, "tgt_ids", tgt_ids)  # (B, T)
        y = record(self, "tgt_embed", self.tgt_emb(tgt_ids))  # (B, T, C)
        y = record(self, "tgt_with_pos", self.pos(y))  # (B, T, C)
        mask = record(self, "tgt_mask", causal_mask(tgt_ids.size(1), tgt_ids.device))  # (1, 1, T, T)
        for layer in self.decoder["layers"]:
            y = layer(y, memory, mask)  # (B, T, C)
        y = record(self, "dec_final", y)  # (B, T, C)
        return record(self, "logits", self.out_proj(y))  # (B, T, V)

    def forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor) -> torch.Tensor:
        # src_ids: (B, S), tgt_ids: (B, T) -> logits (B, T, V); teacher forcing on the whole target
        if src_ids.size(1) > self.cfg.max_len or tgt_ids.size(1) > self.cfg.max_len:
            raise ValueError(f"sentences are limited to {self.cfg.max_len} tokens")
        return self.decode(tgt_ids, self.encode(src_ids))
