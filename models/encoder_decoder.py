"""The encoder–decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017).

Sizes default to the traced model of seed report 001: 2 encoder and 2 decoder layers, 4 heads, d_model 128,
d_ff 256, post-norm (LayerNorm after each residual sum), ReLU feed-forward, sinusoidal positions added to the
token embeddings, and a linear projection to the target vocabulary. No dropout: the report traces one
deterministic forward pass.

Shape legend, used in every comment of this file (``LEGEND`` at the end reads it; the report's pages show it):
    B      batch size
    S      source length (tokens)
    T      target length (tokens)
    C      model width d_model
    h      attention heads
    hs     head size d_model / h
    F      feed-forward width d_ff
    V_src  source vocabulary size
    V      target vocabulary size
Module axes, a shared module's own symbols (bound per instance by its ``record_axes``):
    L       S or T, in modules the encoder and decoder share
    Lq, Lk  query and key lengths of an attention module: S, S in the encoder; T, T and T, S in the decoder

Each module declares the tensors it records as ``Point`` class attributes, with their shapes in
these symbols; ``declared_points(model)`` lists them all (see models/recording.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_trace.models.recording import Point, Role, name_modules, record


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
        encoding = self.get_buffer("table")[: x.size(1)]  # (L, C)
        return x + encoding


_POST_NORM_NOTE = ("post-norm: LayerNorm after the residual sum, so the layer's output is normalised; in the pre-norm "
                   "GPT and ViT, ln_1/ln_2 normalise what attention and the MLP read and output is the residual sum "
                   "itself")
_SPLIT_NOTE = ("the seed report names the projection before the head split q; the GPT and the ViT record only the "
               "per-head tensor, which they call q (here q_heads)")


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over h heads; queries from x_q, keys and values from x_kv."""

    Q = Point("q", ("B", "Lq", "C"), "queries x_q·W_qᵀ + b_q, all heads side by side", note=_SPLIT_NOTE,
              role=Role.QUERIES)
    K = Point("k", ("B", "Lk", "C"), "keys x_kv·W_kᵀ + b_k, all heads side by side", note=_SPLIT_NOTE, role=Role.KEYS)
    V = Point("v", ("B", "Lk", "C"), "values x_kv·W_vᵀ + b_v, all heads side by side", note=_SPLIT_NOTE,
              role=Role.VALUES)
    Q_HEADS = Point("q_heads", ("B", "h", "Lq", "hs"),
                    "queries split into h heads of hs features (the GPT's and ViT's attn.q)", role=Role.QUERIES)
    K_HEADS = Point("k_heads", ("B", "h", "Lk", "hs"), "keys split into h heads (the GPT's and ViT's attn.k)",
                    role=Role.KEYS)
    V_HEADS = Point("v_heads", ("B", "h", "Lk", "hs"), "values split into h heads (the GPT's and ViT's attn.v)",
                    role=Role.VALUES)
    SCORES = Point("scores", ("B", "h", "Lq", "Lk"), "attention scores Q·Kᵀ/√hs, per head")
    MASKED_SCORES = Point("masked_scores", ("B", "h", "Lq", "Lk"),
                          "scores plus the mask: −inf where a query may not look (masked attention only)")
    PROBS = Point("probs", ("B", "h", "Lq", "Lk"),
                  "attention weights: softmax of the scores over the keys, rows sum to 1", role=Role.ATTENTION_WEIGHTS)
    CONTEXT = Point("context", ("B", "h", "Lq", "hs"), "each head's weighted sum of values, probs·V")
    CONCAT = Point("concat", ("B", "Lq", "C"), "the heads' contexts side by side")
    OUT = Point("out", ("B", "Lq", "C"), "the output projection concat·W_oᵀ + b_o")

    def __init__(self, d_model: int, n_heads: int, queries: str = "L", keys: str = "L", masked: bool = False) -> None:
        super().__init__()
        self.record_axes = {"Lq": queries, "Lk": keys}  # this instance's lengths in the legend's symbols (S or T)
        self.unrecorded = () if masked else ("masked_scores",)  # recorded only when forward is given a mask
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
        q = record(self, self.Q, self.W_q(x_q))  # (B, T, C)
        k = record(self, self.K, self.W_k(x_kv))  # (B, S, C)
        v = record(self, self.V, self.W_v(x_kv))  # (B, S, C)
        q_heads = record(self, self.Q_HEADS, self.split_heads(q))  # (B, h, T, hs)
        k_heads = record(self, self.K_HEADS, self.split_heads(k))  # (B, h, S, hs)
        v_heads = record(self, self.V_HEADS, self.split_heads(v))  # (B, h, S, hs)
        # (B, h, T, S)
        scores = record(self, self.SCORES, q_heads @ k_heads.transpose(-2, -1) / math.sqrt(self.head_size))
        if mask is not None:
            # mask: (B or 1, 1, T, S), 0 where allowed and -inf where blocked
            scores = record(self, self.MASKED_SCORES, scores + mask)  # (B, h, T, S)
        probs = record(self, self.PROBS, F.softmax(scores, dim=-1))  # (B, h, T, S), rows sum to 1
        context = record(self, self.CONTEXT, probs @ v_heads)  # (B, h, T, hs)
        # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
        concat = record(self, self.CONCAT, context.transpose(1, 2).reshape(B, T, C))
        return record(self, self.OUT, self.W_o(concat))  # (B, T, C)


class MLP(nn.Module):
    """Position-wise two-layer network: Linear(C->F), ReLU, Linear(F->C)."""

    INPUT = Point("input", ("B", "L", "C"), "what the feed-forward network reads: the LayerNorm output before it",
                  note="the seed report's FFN input; the GPT and the ViT record the same tensor only as "
                  "their block's ln_2")
    FC1 = Point("fc1", ("B", "L", "F"), "first linear layer x·W₁ᵀ + b₁, before the activation")
    HIDDEN = Point("hidden", ("B", "L", "F"), "ReLU of fc1")
    OUT = Point("out", ("B", "L", "C"), "second linear layer hidden·W₂ᵀ + b₂")

    def __init__(self, d_model: int, d_ff: int, length: str = "L") -> None:
        super().__init__()
        self.record_axes = {"L": length}  # S in the encoder, T in the decoder
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = record(self, self.INPUT, x)  # (B, L, C)
        pre_activation = record(self, self.FC1, self.fc1(x))  # (B, L, F)
        hidden = record(self, self.HIDDEN, F.relu(pre_activation))  # (B, L, F)
        return record(self, self.OUT, self.fc2(hidden))  # (B, L, C)


# ----------------------------------------------------------------------------- blocks


class EncoderLayer(nn.Module):
    """x -> LayerNorm(x + SelfAttention(x)) -> LayerNorm(. + MLP(.)) (post-norm)."""

    INPUT = Point("input", ("B", "S", "C"),
                  "what the layer reads: the position-encoded embeddings or the previous layer's output")
    RESIDUAL_1 = Point("residual_1", ("B", "S", "C"), "input + self-attention output", role=Role.RESIDUAL_SUM)
    LN_1 = Point("ln_1", ("B", "S", "C"), "LayerNorm of residual_1 (post-norm)", note=_POST_NORM_NOTE)
    RESIDUAL_2 = Point("residual_2", ("B", "S", "C"), "ln_1 + feed-forward output", role=Role.RESIDUAL_SUM)
    OUTPUT = Point("output", ("B", "S", "C"), "LayerNorm of residual_2: the layer's output", note=_POST_NORM_NOTE,
                   role=Role.LAYER_OUTPUT)

    def __init__(self, cfg: EncoderDecoderConfig) -> None:
        super().__init__()
        # Creation order fixes which random numbers each weight draws (seed report 001).
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, queries="S", keys="S")
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg.d_model, cfg.d_ff, length="S")
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = record(self, self.INPUT, x)  # (B, S, C)
        attn_out = self.self_attn(x, x)  # (B, S, C)
        residual1 = record(self, self.RESIDUAL_1, x + attn_out)  # (B, S, C)
        x = record(self, self.LN_1, self.ln_1(residual1))  # (B, S, C)
        mlp_out = self.mlp(x)  # (B, S, C)
        residual2 = record(self, self.RESIDUAL_2, x + mlp_out)  # (B, S, C)
        return record(self, self.OUTPUT, self.ln_2(residual2))  # (B, S, C)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output, feed-forward; each post-norm."""

    INPUT = Point("input", ("B", "T", "C"),
                  "what the layer reads: the position-encoded target embeddings or the previous layer's output")
    RESIDUAL_1 = Point("residual_1", ("B", "T", "C"), "input + masked self-attention output", role=Role.RESIDUAL_SUM)
    LN_1 = Point("ln_1", ("B", "T", "C"), "LayerNorm of residual_1", note=_POST_NORM_NOTE)
    RESIDUAL_2 = Point("residual_2", ("B", "T", "C"), "ln_1 + cross-attention output", role=Role.RESIDUAL_SUM)
    LN_2 = Point("ln_2", ("B", "T", "C"), "LayerNorm of residual_2")
    RESIDUAL_3 = Point("residual_3", ("B", "T", "C"), "ln_2 + feed-forward output", role=Role.RESIDUAL_SUM)
    OUTPUT = Point("output", ("B", "T", "C"), "LayerNorm of residual_3: the layer's output", note=_POST_NORM_NOTE,
                   role=Role.LAYER_OUTPUT)

    def __init__(self, cfg: EncoderDecoderConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, queries="T", keys="T", masked=True)
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, queries="T", keys="S")
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg.d_model, cfg.d_ff, length="T")
        self.ln_3 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)

    def forward(self, y: torch.Tensor, memory: torch.Tensor, causal_mask: torch.Tensor) -> torch.Tensor:
        # y: (B, T, C) target states; memory: (B, S, C) last encoder layer's output
        y = record(self, self.INPUT, y)  # (B, T, C)
        self_out = self.self_attn(y, y, mask=causal_mask)  # (B, T, C)
        residual1 = record(self, self.RESIDUAL_1, y + self_out)  # (B, T, C)
        y = record(self, self.LN_1, self.ln_1(residual1))  # (B, T, C)
        cross_out = self.cross_attn(y, memory)  # (B, T, C)
        residual2 = record(self, self.RESIDUAL_2, y + cross_out)  # (B, T, C)
        y = record(self, self.LN_2, self.ln_2(residual2))  # (B, T, C)
        mlp_out = self.mlp(y)  # (B, T, C)
        residual3 = record(self, self.RESIDUAL_3, y + mlp_out)  # (B, T, C)
        return record(self, self.OUTPUT, self.ln_3(residual3))  # (B, T, C)


# ----------------------------------------------------------------------------- model


def causal_mask(T: int, device: torch.device | None = None) -> torch.Tensor:
    """(1, 1, T, T): 0 on and below the diagonal, -inf above (no peeking at later tokens)."""
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=1)  # (T, T)
    mask = torch.zeros(T, T, device=device).masked_fill(blocked, float("-inf"))  # (T, T)
    return mask.view(1, 1, T, T)  # (T, T) -> (1, 1, T, T), broadcast over batch and heads


class EncoderDecoderTransformer(nn.Module):
    SRC_IDS = Point("src_ids", ("B", "S"), "source token IDs, one per word")
    SRC_EMB_WEIGHT = Point("src_emb_weight", ("V_src", "C"), "the source embedding table, one row per vocabulary word")
    SRC_EMBED = Point("src_embed", ("B", "S", "C"), "source embeddings: the table rows of the IDs")
    SRC_WITH_POS = Point("src_with_pos", ("B", "S", "C"), "source embeddings plus sinusoidal positions",
                         note="the seed report's name; the GPT calls token + position embedding embed, "
                         "the ViT tokens_pos")
    MEMORY = Point("memory", ("B", "S", "C"), "the last encoder layer's output, read by every cross-attention")
    TGT_IDS = Point("tgt_ids", ("B", "T"), "target token IDs, one per word")
    TGT_EMBED = Point("tgt_embed", ("B", "T", "C"), "target embeddings: the table rows of the IDs")
    TGT_WITH_POS = Point("tgt_with_pos", ("B", "T", "C"), "target embeddings plus sinusoidal positions")
    TGT_MASK = Point("tgt_mask", ("1", "1", "T", "T"), "additive causal mask: 0 on and below the diagonal, −inf above",
                     note="additive (0 / −inf) where the GPT's mask is boolean (True where allowed)", role=Role.MASK)
    DEC_FINAL = Point("dec_final", ("B", "T", "C"), "the last decoder layer's output")
    LOGITS = Point("logits", ("B", "T", "V"), "scores over the target vocabulary at each position")

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
        src_ids = record(self, self.SRC_IDS, src_ids)  # (B, S)
        record(self, self.SRC_EMB_WEIGHT, self.src_emb.weight)  # (V_src, C)
        x = record(self, self.SRC_EMBED, self.src_emb(src_ids))  # (B, S, C)
        x = record(self, self.SRC_WITH_POS, self.pos(x))  # (B, S, C)
        for layer in self.encoder["layers"]:
            x = layer(x)  # (B, S, C)
        return record(self, self.MEMORY, x)  # (B, S, C)

    def decode(self, tgt_ids: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        tgt_ids = record(self, self.TGT_IDS, tgt_ids)  # (B, T)
        y = record(self, self.TGT_EMBED, self.tgt_emb(tgt_ids))  # (B, T, C)
        y = record(self, self.TGT_WITH_POS, self.pos(y))  # (B, T, C)
        mask = record(self, self.TGT_MASK, causal_mask(tgt_ids.size(1), tgt_ids.device))  # (1, 1, T, T)
        for layer in self.decoder["layers"]:
            y = layer(y, memory, mask)  # (B, T, C)
        y = record(self, self.DEC_FINAL, y)  # (B, T, C)
        return record(self, self.LOGITS, self.out_proj(y))  # (B, T, V)

    def forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor) -> torch.Tensor:
        # src_ids: (B, S), tgt_ids: (B, T) -> logits (B, T, V); teacher forcing on the whole target
        if src_ids.size(1) > self.cfg.max_len or tgt_ids.size(1) > self.cfg.max_len:
            raise ValueError(f"sentences are limited to {self.cfg.max_len} tokens")
        return self.decode(tgt_ids, self.encode(src_ids))


# ----------------------------------------------------------------------------- shape legend
# Read from the docstring's table; below the code, so that declaring it moved no line the report pages quote.

from transformer_trace.models.legend import Legend, Quotient  # noqa: E402

LEGEND = Legend.parse(__doc__, relations=(Quotient("hs", "C", "h"),))
