"""Rotary positions (RoPE) as a family of correct forms: with rotary embeddings the attention's scores are Q'·K'ᵀ/√hs,
where Q' and K' are the queries and keys per head with each pair of their first ``dims`` channels rotated by an angle
proportional to the position (``t · base^(-2i/dims)`` for pair i). Implementations differ by parameters, not by
structure: the pairs are the two halves of the rotated channels (rotate-half: GPT-NeoX, Llama in Hugging Face form,
litgpt) or neighbouring channels (interleaved: the Llama reference code, GPT-J), a part of each head or all of it, and
the base; the angles' sign, tables rounded to bfloat16 and a QK-norm after the rotation (modded-nanogpt's
``F.rms_norm`` of each head) are tried on every channel for the common bases. The steps marked on q and k show them
before the rotation, so the checks that rebuild the scores, the probabilities and the context from them fit the
rotation first (``fit_rotary``, from the captured context) and read the rotated tensors (``attention_operand``) instead
of calling every later step unrecognised."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.sources import Ref, TensorSource

# appended to a record name: the tensor the attention read, that step's tensor rotated (the fit made once per run)
ROTATED = "@rotated"
# the bases tried, the common ones first (the first that fits is said; with few rotated pairs several fit alike)
BASES = (10000.0, 500000.0, 1000000.0, 100000.0, 1000.0, 100.0, *(10.0 ** (e / 4) for e in range(8, 29)))
FRACTIONS = (1, 2, 4, 8)  # the part of each head rotated: all of it, half, a quarter (GPT-NeoX, Pythia), an eighth


@dataclass(frozen=True)
class Rotary:
    """One member of the family: the first ``dims`` channels of each head rotated, in ``interleaved`` pairs or halves,
    pair i by the angle t · ``base``^(-2i/dims) at position t. ``xpos``: xPos (Sun et al. 2022, RetNet's), each pair
    also scaled by ζᵢ^(±t/``scale_base``), ζᵢ = (2i + 0.4·dims)/(1.4·dims): +1 the queries' (up), −1 the keys'.
    ``sign`` −1: every angle negated (``x1·cos + x2·sin``, modded-nanogpt's); ``rounded``: the cos and sin tables
    computed in float32 and rounded to bfloat16 (``freqs.cos().bfloat16()``); ``normed``: a QK-norm after the
    rotation, each head's vector RMS-normalised (``F.rms_norm(q, (hs,))``; a unit norm differs by √hs, a scale the
    scores' fit takes)."""

    dims: int
    base: float
    interleaved: bool
    xpos: int = 0
    scale_base: float = 512.0
    sign: int = 1
    rounded: bool = False
    normed: bool = False

    def apply(self, heads: torch.Tensor) -> torch.Tensor:
        """``heads`` (…, T, hs) with the positions along its second last axis, rotated."""
        T, n = heads.shape[-2], self.dims
        kind = torch.float32 if self.rounded else torch.float64  # a bfloat16 table is rounded from float32's
        theta = 1.0 / self.base ** (torch.arange(0, n, 2, dtype=kind) / n)  # (n/2,)
        angles = torch.arange(T, dtype=kind)[:, None] * theta[None, :]  # (T, n/2)
        cos, sin = torch.cos(angles), self.sign * torch.sin(angles)
        if self.rounded:
            cos, sin = cos.bfloat16(), sin.bfloat16()
        cos, sin = cos.to(heads.dtype), sin.to(heads.dtype)
        part, rest = heads[..., :n], heads[..., n:]
        if self.interleaved:
            even, odd = part[..., 0::2], part[..., 1::2]
            turned = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)
        else:
            first, second = part[..., :n // 2], part[..., n // 2:]
            turned = torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)
        if self.xpos:
            zeta = (torch.arange(0, n, 2, dtype=torch.float64) + 0.4 * n) / (1.4 * n)
            factor = (zeta[None, :] ** (self.xpos * torch.arange(T, dtype=torch.float64)[:, None] / self.scale_base))
            factor = factor.repeat_interleave(2, dim=-1) if self.interleaved else torch.cat((factor, factor), dim=-1)
            turned = turned * factor.to(heads.dtype)
        turned = torch.cat((turned, rest), dim=-1)
        if self.normed:
            turned = turned * torch.rsqrt(turned.pow(2).mean(-1, keepdim=True) + torch.finfo(torch.float32).eps)
        return turned

    def __str__(self) -> str:
        pairs = "neighbouring channels paired (interleaved)" if self.interleaved else "the halves paired (rotate-half)"
        scaled = (f", xPos: scaled by ζ^({'+' if self.xpos > 0 else '−'}t/{self.scale_base:g}), "
                  f"{'up (queries)' if self.xpos > 0 else 'down (keys)'}") if self.xpos else ""
        forms = [("every angle negated", self.sign < 0), ("bfloat16 tables", self.rounded),
                 ("then a QK-norm (each head RMS-normalised)", self.normed)]
        more = "".join(f", {words}" for words, held in forms if held)
        return f"rotary positions on {self.dims} channels of each head, {pairs}, base {self.base:,.6g}{scaled}{more}"


def heads_of(x: torch.Tensor, h: int) -> torch.Tensor:
    """A per-head tensor as it is, or a whole one (B, L, C) split into ``h`` heads."""
    if x.dim() == 3:
        B, L, C = x.shape
        return x.reshape(B, L, h, C // h).transpose(1, 2)
    return x


def rotated_like(x: torch.Tensor, rotary: Rotary, h: int) -> torch.Tensor:
    """``x`` rotated per head, in its own layout (a whole (B, L, C) tensor split, rotated and merged back)."""
    turned = rotary.apply(heads_of(x, h))
    return turned.transpose(1, 2).reshape(x.shape) if x.dim() == 3 else turned


def attention_operand(s: TensorSource, ref: Ref) -> torch.Tensor:
    """The queries or keys the attention read: the step's tensor rotated where the run's fit found rotary positions
    (``ROTATED``), else the step's tensor."""
    rotated = s.name(ref) + ROTATED
    return s.t(rotated) if s.has(rotated) else s.t(ref)


def _family(hs: int) -> Iterator[Rotary]:
    for fraction in FRACTIONS:
        dims = hs // fraction
        if dims < 2 or dims % 2 or hs % fraction:
            continue
        for interleaved in (False, True):
            for base in BASES:
                yield Rotary(dims, base, interleaved)
    if hs >= 2 and hs % 2 == 0:  # xPos, as its paper and RetNet have it: every channel, base 10000, ζ^(±t/512)
        for interleaved in (True, False):
            for sign in (1, -1):
                yield Rotary(hs, 10000.0, interleaved, sign)
    if hs >= 2 and hs % 2 == 0:  # every channel, a common base: the angles negated, bfloat16 tables, a QK-norm after
        for sign, rounded, normed in itertools.product((1, -1), (False, True), (False, True)):
            for interleaved, base in itertools.product((False, True), BASES[:6]):
                if (sign, rounded, normed) != (1, False, False):
                    yield Rotary(hs, base, interleaved, sign=sign, rounded=rounded, normed=normed)


def xpos_allowed(rotary: Rotary, part: int | None) -> bool:
    """Whether ``rotary`` is a correct form for ``part`` (0 queries, 1 keys; None: either): xPos scales the queries
    up and the keys down."""
    return not rotary.xpos or part is None or rotary.xpos == (1 if part == 0 else -1)


def rotation_of(got: torch.Tensor, heads: torch.Tensor, part: int | None = None,
                wrong_way: bool = False) -> Rotary | None:
    """The member of the family that turns ``heads`` (…, T, hs, the projection split into heads) into ``got``: queries
    or keys marked after their rotation (``q = rope(q)``); None where no member does. ``part`` (0 q, 1 k) keeps the
    xPos members to its own direction; ``wrong_way``: only the xPos members of the other one (its bug form)."""
    if got.shape != heads.shape or got.dim() < 2 or got.shape[-2] < 2:
        return None
    wanted = ((lambda rotary: bool(rotary.xpos) and not xpos_allowed(rotary, part)) if wrong_way
              else (lambda rotary: xpos_allowed(rotary, part)))
    members = (rotary for rotary in _family(got.shape[-1]) if wanted(rotary))
    return next((rotary for rotary in members if close(got, rotary.apply(heads), "")[0]), None)


def _xpos_wrong_way(check: Any, s: TensorSource) -> Fit | None:
    """Queries or keys (``check``: a head split of the projection its line read, ``part`` 0 or 1) rotated by xPos in
    the other one's direction: keys scaled up with the position like the queries (``downscale`` left out), or the
    queries down."""
    got, (whole, _) = s.t(check.out), check.part_read(s)
    if check.part > 1 or got.dim() != 4:
        return None
    B, H, N, hs = got.shape
    if whole.shape == (B, N, H * hs):
        whole = whole.reshape(B, N, H, hs).transpose(1, 2)
    found = rotation_of(got, whole, check.part, wrong_way=True) if whole.shape == got.shape else None
    if found is None:
        return Fit(False, "no xPos member of the other direction fits")
    own = ("keys", "down", "queries") if check.part == 1 else ("queries", "up", "keys")
    return Fit(True, f"xPos scaled the wrong way: your {s.name(check.out)} is the projection the line read rotated and "
                     f"scaled as the {own[2]} are ({found}), where the {own[0]} are scaled {own[1]}")


XPOS_WRONG_WAY = BugForm("xPos scaled the wrong way", "the step vs the projection rotated by xPos in the other "
                         "direction", _xpos_wrong_way)


def _context(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool) -> torch.Tensor:
    scores = q @ k.transpose(-2, -1) * scale
    if causal:
        T, S = scores.shape[-2:]
        scores = scores.masked_fill(torch.ones(T, S, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def fit_rotary(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, context: torch.Tensor, h: int) -> Rotary | None:
    """The member of the family under which the context (per head (B, h, T, hs), or merged (B, T, C)) is softmax(Q'·K'ᵀ
    × scale)·V, every key seen or none later (the scale 1/√hs or none: a rotary attention with its scaling left out is
    still rotary, and its scores' own check says what is missing); None where the plain product fits (no rotation) or
    no member does. q, k and v are per head or whole, self-attention (one length)."""
    q, k, v = heads_of(q, h), heads_of(k, h), heads_of(v, h)
    if not (q.shape == k.shape == v.shape) or q.dim() != 4 or q.shape[-2] < 2:
        return None
    out = heads_of(context, h) if context.dim() == 3 else context
    if out.shape != q.shape:
        return None
    hs = q.shape[-1]
    forms = [(scale, causal) for scale in (1 / math.sqrt(hs), 1.0) for causal in (True, False)]
    if any(close(out, _context(q, k, v, scale, causal), "")[0] for scale, causal in forms):
        return None  # no rotation: the plain forms' checks judge it
    for rotary in _family(hs):
        turned_q, turned_k = rotary.apply(q), rotary.apply(k)
        if any(close(out, _context(turned_q, turned_k, v, scale, causal), "")[0] for scale, causal in forms):
            return rotary
    return None
