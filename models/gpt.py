"""A decoder-only GPT over bytes, in the style of GPT-2 and nanoGPT.

Every token is one UTF-8 byte (vocabulary of 256), so any text is a prompt and no tokenizer is trained.
Pre-norm blocks: x + Attention(LN(x)), then + MLP(LN(.)), with causal self-attention (a position sees itself
and the positions before it), a fused q/k/v projection, an exact-GELU MLP, a final LayerNorm and a
language-model head whose weight is the token embedding (weight tying). No dropout: the report traces
deterministic forward passes.

Every tensor a forward pass records is declared once, as a ``Point`` class attribute of the
module that computes it, with its named shape in the symbols below (``declared_points(model)``
in models/recording.py lists them; ``GPT.generate``'s points have the scope "generate").
Shapes are those of a plain pass: a pass given a key/value cache records the same names
with S in place of T along the key axes (k, v, scores, masked_scores, probs, mask).

Shape legend, used in every comment of this file (``LEGEND`` at the end reads it; the report's pages show it):
    B   batch size
    T   prompt length in bytes (one token per byte)
    N   bytes generated
    S   positions in the key/value cache after generation, T + N − 1
    C   model width d_model
    h   attention heads
    hs  head size C / h
    M   MLP width, 4·C
    V   vocabulary: the 256 byte values
    L   blocks
In a forward pass T is the positions fed (the prompt's bytes on a plain pass) and S the positions attended to: T on a
plain pass, the cached positions plus T with a key/value cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from transformer_trace.models.recording import Point, Role, is_recording, name_modules, paused, record


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 256  # one token per byte value
    context: int = 256  # longest sequence the position table covers
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 2
    mlp_dim: int = 0  # 0: 4 * d_model, as GPT-2
    layer_norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if not self.mlp_dim:
            object.__setattr__(self, "mlp_dim", 4 * self.d_model)

    @property
    def head_size(self) -> int:
        return self.d_model // self.n_heads


# ----------------------------------------------------------------------------- bytes


def encode(text: str) -> list[int]:
    """One token per UTF-8 byte: "é" is 2 tokens, "中" 3, "🙂" 4."""
    return list(text.encode("utf-8"))


def decode(ids: list[int]) -> str:
    """The text of some bytes; an incomplete or invalid UTF-8 sequence becomes U+FFFD."""
    return bytes(ids).decode("utf-8", errors="replace")


def byte_label(i: int) -> str:
    """A readable label for one byte: printable ASCII as itself, space as "␠", others as hex ("0xC3")."""
    if not 0 <= i < 256:
        raise ValueError(f"{i} is not a byte value (0 to 255)")
    if i == 0x20:
        return "␠"
    if 0x21 <= i <= 0x7E:
        return chr(i)
    return f"0x{i:02X}"


# ----------------------------------------------------------------------------- key/value cache


@dataclass
class KVCache:
    """Keys and values of the positions already seen: one (k, v) pair per block, each (B, h, S, hs).

    Empty until a forward pass fills it; each pass given the cache appends its positions.
    """

    layers: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)

    @property
    def length(self) -> int:
        """Positions held, the position of the next byte fed."""
        return self.layers[0][0].size(2) if self.layers else 0


@dataclass(frozen=True)
class Generation:
    """What ``GPT.generate`` computed, step by step."""

    cached_logits: torch.Tensor  # (B, N, V): the logits that chose each new byte, computed with the cache
    recomputed_logits: torch.Tensor  # (B, N, V): the same positions, recomputed from scratch without a cache
    cache: KVCache  # after the last step: S = T + N - 1 positions


# ----------------------------------------------------------------------------- leaf modules


def causal_mask(T: int, start: int = 0, device: torch.device | None = None) -> torch.Tensor:
    """(1, 1, T, S) bool, S = start + T: True where query start + t may attend to key s (s <= start + t)."""
    queries = torch.arange(start, start + T, device=device).unsqueeze(1)  # (T, 1), absolute positions
    keys = torch.arange(start + T, device=device).unsqueeze(0)  # (1, S)
    return (keys <= queries).view(1, 1, T, start + T)  # (T, S) -> (1, 1, T, S), broadcast over batch and heads


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with one fused q/k/v projection, optionally over cached keys and values."""

    _HEADS_NOTE = ("per head, as the encoder–decoder's q_heads/k_heads/v_heads: "
                   "the fused projection before the split is qkv")
    QKV = Point("qkv", ("B", "T", "3·C"), "the fused projection x·W_qkvᵀ + b: q, k and v side by side",
                role=Role.QUERIES_KEYS_VALUES)
    Q = Point("q", ("B", "h", "T", "hs"), "queries, the first third of qkv split into h heads", note=_HEADS_NOTE,
              role=Role.QUERIES)
    K = Point("k", ("B", "h", "T", "hs"), "keys, the second third of qkv split into heads (S positions with a cache)",
              note=_HEADS_NOTE, role=Role.KEYS)
    V = Point("v", ("B", "h", "T", "hs"), "values, the last third of qkv split into heads (S positions with a cache)",
              note=_HEADS_NOTE, role=Role.VALUES)
    SCORES = Point("scores", ("B", "h", "T", "T"), "attention scores Q·Kᵀ/√hs, per head")
    MASKED_SCORES = Point("masked_scores", ("B", "h", "T", "T"),
                          "scores with −inf where the mask blocks a later position")
    PROBS = Point("probs", ("B", "h", "T", "T"),
                  "attention weights: softmax of the masked scores over the keys, rows sum to 1",
                  role=Role.ATTENTION_WEIGHTS)
    CONTEXT = Point("context", ("B", "h", "T", "hs"), "each head's weighted sum of values, probs·V")
    CONCAT = Point("concat", ("B", "T", "C"), "the heads' contexts side by side")
    OUT = Point("out", ("B", "T", "C"), "the output projection concat·W_projᵀ + b")

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        # x: (B, T, C); mask: (1, 1, T, S);
        # past: keys and values of the S - T earlier positions, each (B, h, S - T, hs).
        # Returns the output (B, T, C) and the keys and values of all S positions, the block's new cache.
        B, T, C = x.shape
        h = self.n_heads
        qkv = record(self, self.QKV, self.qkv(x))  # (B, T, 3C)
        # (B, T, 3C) -> (3, B, h, T, hs) -> each (B, h, T, hs)
        q, k, v = qkv.view(B, T, 3, h, C // h).permute(2, 0, 3, 1, 4).unbind(0)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)  # (B, h, S, hs)
            v = torch.cat([past[1], v], dim=2)  # (B, h, S, hs)
        if not is_recording():
            # Same function as the explicit steps below, fused into one kernel; nothing asks for
            # the intermediate scores here. is_causal aligns its mask top-left, right only when S = T.
            if past is None:
                context = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, h, T, hs)
            else:
                context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, h, T, hs)
            # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
            return self.proj(context.transpose(1, 2).reshape(B, T, C)), (k, v)
        q = record(self, self.Q, q)
        k = record(self, self.K, k)
        v = record(self, self.V, v)
        # (B, h, T, hs) @ (B, h, hs, S) -> (B, h, T, S)
        scores = record(self, self.SCORES, q @ k.transpose(-2, -1) / math.sqrt(C // h))
        # (B, h, T, S), -inf on later positions
        masked = record(self, self.MASKED_SCORES, scores.masked_fill(~mask, float("-inf")))
        probs = record(self, self.PROBS, masked.softmax(dim=-1))  # (B, h, T, S), rows sum to 1
        context = record(self, self.CONTEXT, probs @ v)  # (B, h, T, hs)
        # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
        concat = record(self, self.CONCAT, context.transpose(1, 2).reshape(B, T, C))
        return record(self, self.OUT, self.proj(concat)), (k, v)  # (B, T, C)


class MLP(nn.Module):
    """Position-wise Linear(C->M), exact GELU, Linear(M->C)."""

    FC1 = Point("fc1", ("B", "T", "M"), "first linear layer x·W₁ᵀ + b₁, before the activation")
    HIDDEN = Point("hidden", ("B", "T", "M"), "exact GELU of fc1")
    OUT = Point("out", ("B", "T", "C"), "second linear layer hidden·W₂ᵀ + b₂")

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.mlp_dim)
        self.gelu = nn.GELU()  # exact (erf) GELU, as torch.nn.TransformerEncoderLayer's "gelu"
        self.fc2 = nn.Linear(cfg.mlp_dim, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre_activation = record(self, self.FC1, self.fc1(x))  # (B, T, M)
        hidden = record(self, self.HIDDEN, self.gelu(pre_activation))  # (B, T, M)
        return record(self, self.OUT, self.fc2(hidden))  # (B, T, C)


# ----------------------------------------------------------------------------- block


class Block(nn.Module):
    """Pre-norm: x + Attention(LN(x)), then + MLP(LN(.)); no LayerNorm on the residual stream itself."""

    INPUT = Point("input", ("B", "T", "C"), "the residual stream entering the block")
    LN_1 = Point("ln_1", ("B", "T", "C"), "LayerNorm of the input: what attention reads (pre-norm)")
    RESIDUAL_1 = Point("residual_1", ("B", "T", "C"), "input + attention output", role=Role.RESIDUAL_SUM)
    LN_2 = Point("ln_2", ("B", "T", "C"), "LayerNorm of residual_1: what the MLP reads")
    RESIDUAL_2 = Point("residual_2", ("B", "T", "C"), "residual_1 + MLP output", role=Role.RESIDUAL_SUM)
    OUTPUT = Point("output", ("B", "T", "C"),
                   "the residual stream leaving the block (residual_2; no LayerNorm after it)", role=Role.LAYER_OUTPUT)
    CACHE_K = Point("cache_k", ("B", "h", "S", "hs"), "the keys the key/value cache holds after generation",
                    scope="generate", role=Role.KEYS)
    CACHE_V = Point("cache_v", ("B", "h", "S", "hs"), "the values the key/value cache holds after generation",
                    scope="generate", role=Role.VALUES)

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        x = record(self, self.INPUT, x)  # (B, T, C)
        attn_in = record(self, self.LN_1, self.ln_1(x))  # (B, T, C)
        attn_out, present = self.attn(attn_in, mask, past)  # (B, T, C); keys and values, each (B, h, S, hs)
        residual_1 = record(self, self.RESIDUAL_1, x + attn_out)  # (B, T, C)
        mlp_in = record(self, self.LN_2, self.ln_2(residual_1))  # (B, T, C)
        residual_2 = record(self, self.RESIDUAL_2, residual_1 + self.mlp(mlp_in))  # (B, T, C)
        return record(self, self.OUTPUT, residual_2), present  # (B, T, C)


# ----------------------------------------------------------------------------- model


class GPT(nn.Module):
    IDS = Point("ids", ("B", "T"), "the prompt's bytes, one token each")
    TOK_EMB = Point("tok_emb", ("B", "T", "C"), "token embeddings: the table rows of the bytes")
    POS_EMB = Point("pos_emb", ("T", "C"), "the learned position embeddings of the positions fed",
                    note="the rows used, without a batch axis (broadcast when added); the encoder–decoder's positions "
                    "are a fixed sinusoidal table")
    EMBED = Point("embed", ("B", "T", "C"), "token + position embeddings: the residual stream entering block 1")
    MASK = Point("mask", ("1", "1", "T", "T"), "boolean causal mask: True where a query may attend to a key",
                 note="boolean (True where allowed) where the encoder–decoder's tgt_mask is additive (0 / −inf)",
                 role=Role.MASK)
    LN_F = Point("ln_f", ("B", "T", "C"), "the final LayerNorm of the residual stream")
    LOGITS = Point("logits", ("B", "T", "V"), "scores for the next byte at each position")
    PROBS = Point("probs", ("B", "T", "V"), "softmax of the logits: the next-byte distribution at each position")
    NEW_IDS = Point("new_ids", ("B", "N"), "the bytes generated greedily", scope="generate")
    CACHED_LOGITS = Point("cached_logits", ("B", "N", "V"),
                          "the logits that chose each new byte, computed with the key/value cache", scope="generate")
    RECOMPUTED_LOGITS = Point("recomputed_logits", ("B", "N", "V"),
                              "the same logits recomputed from scratch without a cache", scope="generate")

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.context, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init_weights)
        self.lm_head.weight = self.tok_emb.weight  # weight tying: one (V, C) matrix embeds bytes and scores them
        name_modules(self)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # nanoGPT: N(0, 0.02) weights, zero biases; LayerNorms keep their ones and zeros.
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        # ids: (B, T) byte values -> logits (B, T, V): at each position, scores for the next byte.
        # With a cache, ids continue the cached positions and their keys and values are appended to it.
        B, T = ids.shape
        start = 0 if cache is None else cache.length
        if T == 0:
            raise ValueError("the input is empty; give at least one byte")
        if start + T > self.cfg.context:
            raise ValueError(
                f"{start + T} bytes do not fit the context of {self.cfg.context} positions; shorten the prompt"
                + (f" or generate at most {self.cfg.context - start} more" if start else "")
            )
        ids = record(self, self.IDS, ids)  # (B, T)
        tok = record(self, self.TOK_EMB, self.tok_emb(ids))  # (B, T, C)
        # (T, C), the rows used
        pos = record(self, self.POS_EMB, self.pos_emb(torch.arange(start, start + T, device=ids.device)))
        x = record(self, self.EMBED, tok + pos)  # (B, T, C), positions broadcast over the batch
        mask = record(self, self.MASK, causal_mask(T, start, ids.device))  # (1, 1, T, S)
        presents = []
        for i, block in enumerate(self.blocks):
            x, present = block(x, mask, cache.layers[i] if cache is not None and cache.layers else None)  # (B, T, C)
            presents.append(present)
        if cache is not None:
            cache.layers = presents
        x = record(self, self.LN_F, self.ln_f(x))  # (B, T, C)
        logits = record(self, self.LOGITS, self.lm_head(x))  # (B, T, V)
        record(self, self.PROBS, logits.softmax(dim=-1))  # (B, T, V)
        return logits

    @torch.no_grad()
    def generate(self, ids: torch.Tensor, n_new: int) -> tuple[torch.Tensor, Generation]:
        """Greedily append ``n_new`` bytes to ``ids`` (B, T), feeding one byte a step over a key/value cache.

        Returns the new bytes (B, N) and, per step, the logits that chose each byte (with the
        cache) beside the same logits recomputed from scratch over the whole sequence. Inside
        ``recording()``, the first pass (over the prompt) records the plain pass's points and
        generation then records the points of scope "generate"; its later passes are not recorded.
        """
        T = ids.size(1)
        if n_new < 1:
            raise ValueError(f"n_new is {n_new}; generate at least one byte")
        if T + n_new - 1 > self.cfg.context:
            raise ValueError(
                f"a {T}-byte prompt and {n_new} new bytes need {T + n_new - 1} positions, more than the context "
                f"of {self.cfg.context}; generate at most {self.cfg.context - T + 1}"
            )
        cache = KVCache()
        logits = self(ids, cache)[:, -1]  # (B, V): the prompt's last position predicts the first new byte
        cached, recomputed, new = [], [], list[torch.Tensor]()  # new: each step's chosen IDs (B, 1)
        seq = ids  # (B, T + step)
        with paused():  # generation's passes would overwrite the prompt pass's names
            for step in range(n_new):
                if step:
                    logits = self(new[-1], cache)[:, -1]  # (B, 1) -> (B, V), over the cache of T + step - 1 positions
                cached.append(logits)
                recomputed.append(self(seq)[:, -1])  # (B, V), no cache
                new.append(logits.argmax(dim=-1, keepdim=True))  # (B, 1)
                seq = torch.cat([seq, new[-1]], dim=1)  # (B, T + step + 1)
        new_ids = record(self, self.NEW_IDS, torch.cat(new, dim=1))  # (B, N)
        info = Generation(
            cached_logits=record(self, self.CACHED_LOGITS, torch.stack(cached, dim=1)),  # (B, N, V)
            recomputed_logits=record(self, self.RECOMPUTED_LOGITS, torch.stack(recomputed, dim=1)),  # (B, N, V)
            cache=cache,
        )
        for block, (k, v) in zip(self.blocks, cache.layers):
            record(block, Block.CACHE_K, k)  # (B, h, S, hs), as generate.blocks.<i>.cache_k
            record(block, Block.CACHE_V, v)  # (B, h, S, hs)
        return new_ids, info


# ----------------------------------------------------------------------------- shape legend
# Read from the docstring's table; below the code, so that declaring it moved no line the report pages quote.

from transformer_trace.models.legend import Legend, Quotient  # noqa: E402

# S = T + N − 1 holds after generation only: no relation of every pass
LEGEND = Legend.parse(__doc__, relations=(Quotient("hs", "C", "h"),))
