"""Checks specific to the GPT report, listed in ``CHECKS`` (the report merges them with
transformer_trace.checks.CHECKS).

Each recomputes its claim in float64: from other captured tensors, from the model's parameters,
or (for the key/value cache and generation) by re-running a float64 copy of the model on the
whole sequence without a cache.
"""

from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass

import torch

from transformer_trace.checks import THIS, Check, TraceUse, close, tolerance
from transformer_trace.checks.base import weight_and_bias
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.registry import Registry
from transformer_trace.reports.gpt.causal_masks import CausalMaskBool, MaskedFillOf, optional_input
from transformer_trace.sources import InputRef, ModuleRef, NotCheckable, ParamRef, Ref, TensorSource
from transformer_trace.tensors import fmt
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.models.gpt import decode, encode
from transformer_trace.models.recording import recording


@dataclass(frozen=True, kw_only=True)
class PromptBytes(Check):
    """The IDs are the UTF-8 bytes of the run input ``prompt`` (the prompt text)."""
    CLAIM = "the IDs are the prompt's UTF-8 bytes"

    out: Ref = THIS
    prompt: InputRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        text = s.input(self.prompt)
        got = [int(i) for i in s.t(self.out).flatten().tolist()]
        expected = encode(text)
        passed = got == expected and all(0 <= i < 256 for i in got) and decode(got) == text
        n_chars = len(text)
        return "the IDs are the prompt's UTF-8 bytes", passed, (
            f"{len(got)} IDs, each a byte value 0–255, equal the UTF-8 encoding of the {n_chars}-character prompt and "
            "decode back to it"
            if passed else f"IDs {got[:12]}… differ from the UTF-8 bytes {expected[:12]}…"
        )


@dataclass(frozen=True, kw_only=True)
class EmbeddingRows(Check):
    """Each position of ``out`` is its byte's row (``ids``) of the embedding ``parameter``."""
    CLAIM = "each position is its byte's row of the embedding table"

    TRACE = TraceUse(calls={"parameter": (ModuleKind.EMBEDDING, "weight"), "ids": (ModuleKind.EMBEDDING, "input")})

    out: Ref = THIS
    ids: Ref
    parameter: ParamRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        table = s.parameter(self.parameter)  # (V, C)
        passed, detail = close(s.t(self.out), table[s.t(self.ids).long()], "each position vs row ID of "
                                                                           f"{self.parameter}")
        return f"each position is its byte's row of {self.parameter}", passed, detail


def _rows_shifted(check: PositionRows, s: TensorSource) -> Fit | None:
    """Position IDs that start past 0 (``arange(1, T + 1)``): the step is T consecutive rows of the table from
    another row than 0, the first offset that fits named."""
    got, table = s.t(check.out), s.parameter(check.parameter)
    T = got.shape[0]
    for offset in range(1, table.shape[0] - T + 1):
        fits, detail = close(got, table[offset:offset + T], f"row t vs row t + {offset} of {check.parameter}")
        if fits:
            return Fit(True, f"the positions are shifted: your {s.name(check.out)} is rows {offset}…{offset + T - 1} "
                             f"of {check.parameter}, position t given row t + {offset} ({detail})")
    return Fit(False, "no other run of consecutive rows of the table fits")


@dataclass(frozen=True, kw_only=True)
class PositionRows(Check):
    """``out`` (T, C) is rows 0…T−1 of the position-embedding ``parameter``."""
    CLAIM = "is the first rows of the position table"

    TRACE = TraceUse(calls={"parameter": (ModuleKind.EMBEDDING, "weight")})
    BUG_FORMS = (BugForm("positions shifted", "T consecutive rows of the table from another row than 0",
                         _rows_shifted),)

    out: Ref = THIS
    parameter: ParamRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        got = s.t(self.out)  # (T, C)
        table = s.parameter(self.parameter)  # (context, C)
        passed, detail = close(got, table[: got.shape[0]], f"row t vs row t of {self.parameter}, t = "
                                                           f"0…{got.shape[0] - 1}")
        return (
            f"rows 0…T−1 of {self.parameter}",
            passed,
            detail + f"; {table.shape[0] - got.shape[0]} of its {table.shape[0]} rows are unused by this prompt",
        )


@dataclass(frozen=True, kw_only=True)
class GptBlockRerun(Check):
    """``out`` is the GPT ``block`` re-run in float64 on its recorded input ``x`` under the recorded ``mask``."""
    CLAIM = "is the whole block run again on its input"

    out: Ref = THIS
    x: Ref
    block: ModuleRef
    mask: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        module = copy.deepcopy(s.module(self.block)).double().cpu()
        with torch.no_grad():
            expected, _ = module(s.t(self.x), s.cpu(self.mask).bool())
        passed, detail = close(s.t(self.out), expected, "the block re-run in float64 on its recorded input")
        return "equals the block applied to its input", passed, detail


def _optional_module(s: TensorSource, ref: ModuleRef) -> object | None:
    try:
        return s.module(ref)
    except NotCheckable:
        return None


@dataclass(frozen=True, kw_only=True)
class TiedHead(Check):
    """``out`` is ``x`` times the token-embedding table, and the ``head``'s weight is the ``embedding``'s (weight
    tying)."""
    CLAIM = "is its input times the token-embedding table (tied weights)"

    TRACE = TraceUse(calls={"head": (ModuleKind.LINEAR, "module"), "x": (ModuleKind.LINEAR, "input")})

    out: Ref = THIS
    x: Ref
    head: ModuleRef
    embedding: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        head = s.module(self.head)
        if getattr(head, "traced", False):  # a traced script's own head: untied weights are its design, not a bug
            tied = head.weight is getattr(_optional_module(s, self.embedding), "weight", None)
            if not tied:
                expected = torch.nn.functional.linear(s.t(self.x), *weight_and_bias(head))
                out, what = s.t(self.out), f"recomputed ln_f · {self.head}.weightᵀ"
                if expected.shape != out.shape and expected.shape[-1:] == out.shape[-1:] \
                        and expected.numel() == out.numel():
                    expected, what = expected.reshape(out.shape), what + " (applied to a (B·T, C) view, viewed back)"
                passed, detail = close(out, expected, what)
                return "equals lm_head(ln_f) (its weight is not the token embedding's: no weight tying)", passed, detail
        embedding = s.module(self.embedding)
        tied = head.weight is embedding.weight
        emb_weight, _ = weight_and_bias(embedding)
        bias = weight_and_bias(head)[1] if tied else None  # a tied head may keep a bias of its own (nn.Linear's)
        expected = s.t(self.x) @ emb_weight.T + (0 if bias is None else bias)  # (B, T, C) @ (C, V) -> (B, T, V)
        passed, detail = close(s.t(self.out), expected, f"recomputed ln_f · {self.embedding}.weightᵀ"
                               + ("" if bias is None else f" + {self.head}.bias (the head's own bias)"))
        V, C = emb_weight.shape
        return "equals ln_f times the token-embedding table (weight tying)", passed and tied, (
            f"{self.head}.weight is {self.embedding}.weight, one ({V}, {C}) parameter: {tied}; " + detail
        )


@dataclass(frozen=True, kw_only=True)
class NextByte(Check):
    """Tensors only: the last position of ``out`` is the softmax of its ``logits``, sums to 1, and its argmax is the
    first generated byte."""
    CLAIM = "the last position is the softmax of its logits, its largest value the next byte"

    out: Ref = THIS
    logits: Ref
    new_ids: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        probs = s.t(self.out)[0, -1]  # (V,)
        expected = torch.softmax(s.t(self.logits)[0, -1], dim=-1)
        passed, detail = close(probs, expected, "recomputed softmax of the last position's logits")
        total = float(probs.sum())
        top = int(probs.argmax())
        first = int(s.t(self.new_ids)[0, 0])
        passed &= abs(total - 1) <= tolerance() and top == first
        return "sums to 1; its most probable byte is the first generated byte", passed, (
            f"sum = {total:.6f}; the largest probability, {fmt(float(probs[top]))}, is on byte {top}, and generation "
            f"chose byte {first}; " + detail
        )


# ----------------------------------------------------------------------------- generation

_FULL_PASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {ids: recording of a float64 pass}


def full_pass(s: TensorSource, ids: list[int]):
    """A float64 copy of the model run once, without a cache, over ``ids``: the recomputation generation is checked
    against."""
    whole = s.module("")  # the model itself; NotCheckable without one
    passes = _FULL_PASSES.setdefault(whole, {})
    key = tuple(ids)
    if key not in passes:
        model = copy.deepcopy(whole).double().cpu()
        with torch.no_grad(), recording() as rec:
            model(torch.tensor([ids]))
        passes[key] = rec
    return passes[key]


def _sequence(s: TensorSource, ids: Ref, new_ids: Ref) -> tuple[list[int], list[int]]:
    prompt = [int(i) for i in s.cpu(ids)[0].tolist()]
    new = [int(i) for i in s.cpu(new_ids)[0].tolist()]
    return prompt, new


@dataclass(frozen=True, kw_only=True)
class CacheMatchesFullPass(Check):
    """The cached keys or values (``part`` "k" or "v") of ``block`` equal a float64 pass without a cache over every
    byte fed."""
    CLAIM = "the cached keys or values equal a pass without a cache"

    out: Ref = THIS
    prompt_part: Ref
    ids: Ref
    new_ids: Ref
    block: ModuleRef
    part: str

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        prompt, new = _sequence(s, self.ids, self.new_ids)
        fed = prompt + new[:-1]  # every byte the model was fed: the last generated one never is
        cached = s.t(self.out)  # (B, h, S, hs)
        T, S = len(prompt), len(fed)
        reference = full_pass(s, fed).tensor(f"{s.name(self.block)}.attn.{self.part}")  # (B, h, S, hs), float64
        same, detail = close(cached, reference, f"cached {self.part} vs a float64 pass over all {S} bytes without a "
                                                "cache")
        first, _ = close(cached[:, :, :T], s.t(self.prompt_part), f"first {T} positions vs the prompt pass")
        return (
            f"the cache holds the {'keys' if self.part == 'k' else 'values'} of every byte fed so far",
            same and first and cached.shape[2] == S,
            (
                f"{S} positions = {T} prompt bytes + {len(new) - 1} generated bytes fed back; the first {T} equal the "
                f"prompt pass's {self.part}: {first}; " + detail
            ),
        )


@dataclass(frozen=True, kw_only=True)
class CacheMatchesRecomputation(Check):
    """The logits computed with the cache equal the ``recomputed`` ones and a float64 pass without a cache."""
    CLAIM = "the logits with the cache equal those without"

    out: Ref = THIS
    recomputed: Ref
    ids: Ref
    new_ids: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        cached, again = s.t(self.out), s.t(self.recomputed)  # (B, N, V) each
        agree, detail = close(cached, again, "cached vs recomputed logits")
        prompt, new = _sequence(s, self.ids, self.new_ids)
        fed = prompt + new[:-1]
        # (B, N, V): the positions that chose each new byte
        reference = full_pass(s, fed).tensor("logits")[:, len(prompt) - 1:]
        exact, detail64 = close(cached, reference, "cached vs a float64 pass")
        N = cached.shape[1]
        return "the cache gives the logits of a full recomputation", agree and exact, (
            f"{N} steps; {detail}; {detail64}"
        )


@dataclass(frozen=True, kw_only=True)
class GreedyBytes(Check):
    """Tensors only: each generated byte ``out`` is the argmax of its step's ``logits``."""
    CLAIM = "each generated byte is the largest of its step's logits"

    out: Ref = THIS
    logits: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        got = [int(i) for i in s.cpu(self.out)[0].tolist()]
        chosen = [int(i) for i in s.t(self.logits)[0].argmax(-1).tolist()]
        passed = got == chosen and all(0 <= i < 256 for i in got)
        return "each byte is the most probable one at its step", passed, (
            f"all {len(got)} bytes are the argmax of their step's logits: {' '.join(f'0x{i:02X}' for i in got)}"
            if passed else f"bytes {got} differ from the argmaxes {chosen}"
        )


# ----------------------------------------------------------------------------- what training did

# held-out bits per byte measured now vs at the end of training (float32 sums in another order)
RECORD_BITS_TOLERANCE = 1e-3


@dataclass(frozen=True, kw_only=True)
class TrainingEffect(Check):
    """The training page's per-head statistics (run input "training") recomputed from every block's attention.

    ``block_probs`` is the record name of a block's attention probabilities with ``{i}`` for the block index.
    """
    CLAIM = "the training statistics equal their recomputation from every block's attention"

    block_probs: str

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        facts = s.input("training")
        shown = facts["heads"]
        worst, n_rows = 0.0, 0
        # every statistic recomputed row by row, in float64, from the recorded weights
        for i, block in enumerate(shown):
            probs = s.t(self.block_probs.replace("{i}", str(i)))[0]  # (h, T, T)
            T = probs.size(-1)
            n_rows = T - 1
            for h, stats in enumerate(block):
                rows = [probs[h, t, :t + 1] for t in range(1, T)]
                previous = sum(float(row[-2]) for row in rows) / n_rows
                same = sum(float(row[-1]) for row in rows) / n_rows
                entropy = sum(float(-(row[row > 0] * row[row > 0].log2()).sum()) for row in rows) / n_rows
                worst = max(worst, abs(previous - stats["previous"]), abs(same - stats["same"]),
                            abs(entropy - stats["entropy"]))
        best = facts["best_head"]
        pairs = [(i, h) for i, block in enumerate(shown) for h in range(len(block))]
        strongest = max(pairs, key=lambda ih: shown[ih[0]][ih[1]]["previous"]) if pairs else None
        best_ok = best is None if strongest is None else list(strongest) == best
        passed = worst <= tolerance() and best_ok
        detail = (
            (
                f"{len(pairs)} heads' shares and entropies recomputed over {n_rows} query rows differ by at most "
                f"{worst:.1e}; "
                f"the most previous-token-like head is the largest share: {best_ok}"
            )
            if pairs
            else "a one-byte prompt has no previous byte to measure"
        )
        record, checkpoint = facts["record"], facts["checkpoint"]
        if record:
            same_file = checkpoint["sha256"] == record.get("checkpoint_sha256")
            gap = abs(facts["held_out_bits"] - record["held_out_bits_per_byte"])
            passed = passed and same_file and gap <= RECORD_BITS_TOLERANCE
            detail += (f"; the checkpoint's sha256 equals the training record's: {same_file}; held-out bits per byte "
                       "measured now "
                       f"{facts['held_out_bits']:.4f} vs {record['held_out_bits_per_byte']:.4f} at the end of training "
                       f"(tolerance {RECORD_BITS_TOLERANCE:g})")
        return (
            "per-head statistics recomputed from the recorded attention"
            + ("; the checkpoint is the one trained" if record else ""),
            passed,
            detail,
        )


CHECKS: Registry[type[Check]] = Registry("check", [(cls.key(), cls) for cls in (
    PromptBytes, EmbeddingRows, PositionRows, CausalMaskBool, MaskedFillOf, GptBlockRerun, TiedHead, NextByte,
    CacheMatchesFullPass, CacheMatchesRecomputation, GreedyBytes, TrainingEffect,
)])
