"""A decoder-only GPT over bytes, in the style of GPT-2 and nanoGPT.

Every token is one UTF-8 byte (vocabulary of 256), so any text is a prompt and no
tokenizer is trained. Pre-norm blocks: x + Attention(LN(x)), then + MLP(LN(.)),
with causal self-attention (a position sees itself and the positions before it),
a fused q/k/v projection, an exact-GELU MLP, a final LayerNorm and a language-model
head whose weight is the token embedding (weight tying). No dropout: the report
traces deterministic forward passes.

Every name a forward pass records is declared up front by ``record_points(cfg)``
(and ``generation_record_points(cfg)`` for ``GPT.generate``), each with its named
shape in the symbols below.

Shape legend, used in every comment of this file:
    B   batch size
    T   positions fed to a forward pass (the prompt's bytes on a plain pass)
    S   positions attended to: T on a plain pass; with a key/value cache, the cached
        positions plus T; after generating N bytes from a T-byte prompt, T + N - 1
    N   bytes generated
    C   model width, d_model
    h   number of attention heads
    hs  head size, C // h
    M   MLP width
    V   vocabulary size, the 256 byte values
    L   number of blocks
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from models.recording import is_recording, name_modules, paused, record


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 256  # one token per byte value
    context: int = 256  # longest sequence the position table covers
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 2
    mlp_dim: int | None = None  # None: 4 * d_model, as GPT-2
    layer_norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.mlp_dim is None:
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


# ----------------------------------------------------------------------------- record points


def record_points(cfg: GPTConfig) -> dict[str, tuple[str, ...]]:
    """Every name a plain forward pass records, in the order computed, with its named shape.

    Shapes are written in the symbols of the module's legend; "3C" is three times C and
    "1" a literal size of one. A pass given a key/value cache records the same names, with
    S in place of T along the key axes (k, v, scores, masked_scores, probs, mask).
    """
    points: dict[str, tuple[str, ...]] = {
        "ids": ("B", "T"),
        "tok_emb": ("B", "T", "C"),
        "pos_emb": ("T", "C"),
        "embed": ("B", "T", "C"),
        "mask": ("1", "1", "T", "T"),
    }
    for i in range(cfg.n_layers):
        block = f"blocks.{i}"
        points |= {
            f"{block}.input": ("B", "T", "C"),
            f"{block}.ln_1": ("B", "T", "C"),
            f"{block}.attn.qkv": ("B", "T", "3C"),
            f"{block}.attn.q": ("B", "h", "T", "hs"),
            f"{block}.attn.k": ("B", "h", "T", "hs"),
            f"{block}.attn.v": ("B", "h", "T", "hs"),
            f"{block}.attn.scores": ("B", "h", "T", "T"),
            f"{block}.attn.masked_scores": ("B", "h", "T", "T"),
            f"{block}.attn.probs": ("B", "h", "T", "T"),
            f"{block}.attn.context": ("B", "h", "T", "hs"),
            f"{block}.attn.concat": ("B", "T", "C"),
            f"{block}.attn.out": ("B", "T", "C"),
            f"{block}.residual_1": ("B", "T", "C"),
            f"{block}.ln_2": ("B", "T", "C"),
            f"{block}.mlp.fc1": ("B", "T", "M"),
            f"{block}.mlp.hidden": ("B", "T", "M"),
            f"{block}.mlp.out": ("B", "T", "C"),
            f"{block}.residual_2": ("B", "T", "C"),
            f"{block}.output": ("B", "T", "C"),
        }
    points |= {
        "ln_f": ("B", "T", "C"),
        "logits": ("B", "T", "V"),
        "probs": ("B", "T", "V"),
    }
    return points


def generation_record_points(cfg: GPTConfig) -> dict[str, tuple[str, ...]]:
    """The names ``GPT.generate`` adds to a recording, with their named shapes.

    Its first pass, over the prompt, also records every name of ``record_points(cfg)``.
    """
    points: dict[str, tuple[str, ...]] = {
        "generate.new_ids": ("B", "N"),
        "generate.cached_logits": ("B", "N", "V"),
        "generate.recomputed_logits": ("B", "N", "V"),
    }
    for i in range(cfg.n_layers):
        points[f"generate.blocks.{i}.cache_k"] = ("B", "h", "S", "hs")
        points[f"generate.blocks.{i}.cache_v"] = ("B", "h", "S", "hs")
    return points


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

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        # x: (B, T, C); mask: (1, 1, T, S); past: keys and values of the S - T earlier positions, each (B, h, S - T, hs).
        # Returns the output (B, T, C) and the keys and values of all S positions, the block's new cache.
        B, T, C = x.shape
        h = self.n_heads
        qkv = record(self, "qkv", self.qkv(x))  # (B, T, 3C)
        q, k, v = qkv.view(B, T, 3, h, C // h).permute(2, 0, 3, 1, 4).unbind(0)  # (B, T, 3C) -> (3, B, h, T, hs) -> each (B, h, T, hs)
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
            return self.proj(context.transpose(1, 2).reshape(B, T, C)), (k, v)  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
        q = record(self, "q", q)
        k = record(self, "k", k)
        v = record(self, "v", v)
        scores = record(self, "scores", q @ k.transpose(-2, -1) / math.sqrt(C // h))  # (B, h, T, hs) @ (B, h, hs, S) -> (B, h, T, S)
        masked = record(self, "masked_scores", scores.masked_fill(~mask, float("-inf")))  # (B, h, T, S), -inf on later positions
        probs = record(self, "probs", masked.softmax(dim=-1))  # (B, h, T, S), rows sum to 1
        context = record(self, "context", probs @ v)  # (B, h, T, hs)
        concat = record(self, "concat", context.transpose(1, 2).reshape(B, T, C))  # (B, h, T, hs) -> (B, T, h, hs) -> (B, T, C)
        return record(self, "out", self.proj(concat)), (k, v)  # (B, T, C)


class MLP(nn.Module):
    """Position-wise Linear(C->M), exact GELU, Linear(M->C)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.mlp_dim)
        self.gelu = nn.GELU()  # exact (erf) GELU, as torch.nn.TransformerEncoderLayer's "gelu"
        self.fc2 = nn.Linear(cfg.mlp_dim, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre_activation = record(self, "fc1", self.fc1(x))  # (B, T, M)
        hidden = record(self, "hidden", self.gelu(pre_activation))  # (B, T, M)
        return record(self, "out", self.fc2(hidden))  # (B, T, C)


# ----------------------------------------------------------------------------- block


class Block(nn.Module):
    """Pre-norm: x + Attention(LN(x)), then + MLP(LN(.)); no LayerNorm on the residual stream itself."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        x = record(self, "input", x)  # (B, T, C)
        attn_in = record(self, "ln_1", self.ln_1(x))  # (B, T, C)
        attn_out, present = self.attn(attn_in, mask, past)  # (B, T, C); keys and values, each (B, h, S, hs)
        residual_1 = record(self, "residual_1", x + attn_out)  # (B, T, C)
        mlp_in = record(self, "ln_2", self.ln_2(residual_1))  # (B, T, C)
        residual_2 = record(self, "residual_2", residual_1 + self.mlp(mlp_in))  # (B, T, C)
        return record(self, "output", residual_2), present  # (B, T, C)


# ----------------------------------------------------------------------------- model


class GPT(nn.Module):
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
        ids = record(self, "ids", ids)  # (B, T)
        tok = record(self, "tok_emb", self.tok_emb(ids))  # (B, T, C)
        pos = record(self, "pos_emb", self.pos_emb(torch.arange(start, start + T, device=ids.device)))  # (T, C), the rows used
        x = record(self, "embed", tok + pos)  # (B, T, C), positions broadcast over the batch
        mask = record(self, "mask", causal_mask(T, start, ids.device))  # (1, 1, T, S)
        presents = []
        for i, block in enumerate(self.blocks):
            x, present = block(x, mask, cache.layers[i] if cache is not None and cache.layers else None)  # (B, T, C)
            presents.append(present)
        if cache is not None:
            cache.layers = presents
        x = record(self, "ln_f", self.ln_f(x))  # (B, T, C)
        logits = record(self, "logits", self.lm_head(x))  # (B, T, V)
        record(self, "probs", logits.softmax(dim=-1))  # (B, T, V)
        return logits

    @torch.no_grad()
    def generate(self, ids: torch.Tensor, n_new: int) -> tuple[torch.Tensor, Generation]:
        """Greedily append ``n_new`` bytes to ``ids`` (B, T), feeding one byte a step over a key/value cache.

        Returns the new bytes (B, N) and, per step, the logits that chose each byte (with the
        cache) beside the same logits recomputed from scratch over the whole sequence. Inside
        ``recording()``, the first pass (over the prompt) records ``record_points(cfg)`` and
        generation then records ``generation_record_points(cfg)``; its later passes are not recorded.
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
        cached, recomputed, new = [], [], []
        seq = ids  # (B, T + step)
        with paused():  # generation's passes would overwrite the prompt pass's names
            for step in range(n_new):
                if step:
                    logits = self(new[-1], cache)[:, -1]  # (B, 1) -> (B, V), over the cache of T + step - 1 positions
                cached.append(logits)
                recomputed.append(self(seq)[:, -1])  # (B, V), no cache
                new.append(logits.argmax(dim=-1, keepdim=True))  # (B, 1)
                seq = torch.cat([seq, new[-1]], dim=1)  # (B, T + step + 1)
        new_ids = record(self, "generate.new_ids", torch.cat(new, dim=1))  # (B, N)
        info = Generation(
            cached_logits=record(self, "generate.cached_logits", torch.stack(cached, dim=1)),  # (B, N, V)
            recomputed_logits=record(self, "generate.recomputed_logits", torch.stack(recomputed, dim=1)),  # (B, N, V)
            cache=cache,
        )
        for i, (k, v) in enumerate(cache.layers):
            record(self, f"generate.blocks.{i}.cache_k", k)  # (B, h, S, hs)
            record(self, f"generate.blocks.{i}.cache_v", v)  # (B, h, S, hs)
        return new_ids, info
