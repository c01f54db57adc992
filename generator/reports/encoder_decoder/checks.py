"""Checks specific to the encoder–decoder report, listed in ``CHECKS`` (the report merges them with
transformer_trace.checks.CHECKS)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import torch

from transformer_trace.checks import THIS, Check, CheckResult, SameTensor, close, whole_ids
from transformer_trace.checks.base import BoundT, CallBinder, TraceUse
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.registry import Registry
from transformer_trace.checks.sinusoids import own_table
from transformer_trace.sources import InputRef, NotCheckable, ParamRef, Ref, TensorDict, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind


@dataclass(frozen=True, kw_only=True)
class TokenIds(Check):
    """The IDs decode back to the sentence: ``sentence``, ``vocab`` and ``words`` are the run's text, its word -> ID
    table
    and ID -> word list; without them (captured tensors alone), the IDs are whole numbers ≥ 0."""
    CLAIM = "the IDs decode back to the sentence"

    ids: Ref = THIS
    sentence: InputRef
    vocab: InputRef
    words: InputRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        try:
            tokens, table, words = s.input(self.sentence).split(), s.input(self.vocab), s.input(self.words)
        except NotCheckable:  # captured without the run's text (a trace): what the IDs alone show
            return whole_ids(s.t(self.ids))
        got = [int(i) for i in s.t(self.ids).flatten().tolist()]
        decoded = [words[i] for i in got]
        passed = decoded == tokens and len(got) == len(tokens) and all(0 <= i < len(table) for i in got)
        return "IDs decode back to the sentence", passed, (
            f"{len(got)} IDs, each below the vocabulary size {len(table)}, look up to the {len(tokens)} words of the "
            "sentence in order"
            if passed else f"decoded {decoded!r}, expected {tokens!r}"
        )


@dataclass(frozen=True, kw_only=True)
class EmbeddingTableRows(Check):
    """The captured table is the model's ``parameter``, one row per word of ``vocab``."""
    CLAIM = "is the embedding table, one row per word"

    table: Ref = THIS
    parameter: ParamRef
    vocab: InputRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        captured = s.t(self.table)
        vocab_size = len(s.input(self.vocab))
        same, detail = close(captured, s.parameter(self.parameter), f"captured table vs the model's {self.parameter}")
        passed = same and captured.shape[0] == vocab_size
        return "the model's own table, one row per vocabulary word", passed, (
            f"{captured.shape[0]} rows for {vocab_size} distinct words, {captured.shape[1]} features each; " + detail
        )


def _table_layouts(L: int, C: int, cos: Any = torch.cos) -> dict[str, torch.Tensor]:
    """The sinusoid tables correct code adds, (L, C) each: the paper's (sin on even features, cos on odd ones) and
    tensor2tensor's (the sines of every frequency, then the cosines: ``torch.cat([sin, cos], dim=1)``); with ``cos``
    ``torch.sin``, the bug form's tables (sin where cos belongs)."""
    pos = torch.arange(L, dtype=torch.float64)[:, None]
    i = torch.arange(C, dtype=torch.float64)[None, :]
    angle = pos / torch.pow(10000.0, (2 * torch.div(i, 2, rounding_mode="floor")) / C)
    interleaved = torch.where(i % 2 == 0, torch.sin(angle), cos(angle))
    half = C // 2
    timescales = torch.exp(torch.arange(half, dtype=torch.float64) * -(math.log(10000.0) / max(half - 1, 1)))
    scaled = pos * timescales[None, :]
    halves = torch.nn.functional.pad(torch.cat([torch.sin(scaled), cos(scaled)], dim=1), (0, C % 2))
    return {"the paper's table (sin and cos interleaved)": interleaved,
            "sin half, then cos half (tensor2tensor's layout)": halves}


@dataclass(frozen=True)
class PositionsFit:
    """``out`` read as ``scale`` · ``before`` + ``times`` × a sinusoid ``table`` (rows whose embedding was zeroed on the
    way, padding tokens, add the table alone): the prediction, and the parameters in words."""

    prediction: torch.Tensor
    words: str


def _fit_positions(out: torch.Tensor, before: torch.Tensor, table: torch.Tensor, times: int) -> PositionsFit:
    """The embedding's own factor fitted by least squares (1 where the table is added to the lookup itself, √C where
    the lookup is scaled on the way)."""
    rest = out.double() - times * table.expand_as(out)
    before = before.double().expand_as(out)
    zeroed = rest.abs().amax(-1, keepdim=True) <= 1e-4 * (1 + table.abs().max())  # a padding row, its embedding zeroed
    if bool(zeroed.all()):  # every row the table alone: the embedding left out, no padding
        zeroed = torch.zeros_like(zeroed)
    kept = before * ~zeroed
    scale = float((rest * kept).sum() / (kept * kept).sum().clamp_min(1e-30))
    if scale < 0.05:  # an embedding (nearly) left out is no factor of correct code
        scale = 1.0
    prediction = torch.where(zeroed, torch.zeros_like(before), scale * before) + times * table.expand_as(out)
    words = "" if abs(scale - 1) < 1e-4 else f"the embedding scaled by {scale:.4g} on the way"
    if words and abs(scale - math.sqrt(out.shape[-1])) < 1e-3 * scale:
        words += f" (√{out.shape[-1]})"
    if int(zeroed.sum()):
        rows = int(zeroed.sum())
        words += ("; " if words else "") + f"{rows} padding row{'s' * (rows != 1)} zeroed before the table was added"
    return PositionsFit(prediction, words)


def lookup_under(out: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, str] | None:
    """The embedding lookup a positions step (``out``) added a sinusoid table to, where the lookup is not captured:
    ``out`` minus the table (the paper's or tensor2tensor's, added once or twice), one row per token ID, where that
    leaves the same row wherever an ID stands and some ID stands at two positions (else nothing tells a lookup from
    any other term); with the table it leaves out. None where no table leaves a lookup."""
    if tuple(ids.shape) != tuple(out.shape[:-1]) or bool((ids != ids.round()).any()) or bool((ids < 0).any()):
        return None
    keys, positions = ids.reshape(-1).long(), torch.arange(out.shape[-2]).expand(ids.shape).reshape(-1)
    if not any(len(set(positions[keys == key].tolist())) > 1 for key in keys.unique()):
        return None
    counts = torch.bincount(keys).clamp_min(1)[:, None]
    for times in (1, 2):
        for layout, table in _table_layouts(*out.shape[-2:]).items():
            rest = (out - times * table.expand_as(out)).reshape(-1, out.shape[-1])
            lookup = (torch.zeros(counts.shape[0], rest.shape[-1], dtype=rest.dtype).index_add_(0, keys, rest)
                      / counts)[keys]
            if close(rest, lookup, "")[0]:
                return lookup.reshape(out.shape), f"{'twice ' if times == 2 else ''}{layout}"
    return None


def _added_twice(check: SinusoidalPositions, s: TensorSource) -> Fit:
    out, before = s.t(check.out), s.t(check.before)
    details = []
    for layout, table in _table_layouts(*out.shape[-2:]).items():
        fitted = _fit_positions(out, before, table, times=2)
        fits, detail = close(out, fitted.prediction, "vs its input plus twice that table"
                             + (f" ({fitted.words})" if fitted.words else ""))
        if fits:
            return Fit(True, f"the positions were added twice: your {s.name(check.out)} is its input plus twice the "
                             f"sinusoidal table, {layout} ({detail})")
        details.append(detail)
    own = own_table(out, before)
    if own.fits and abs(own.amplitude - 2) <= 2e-3:
        return Fit(True, f"the positions were added twice: your {s.name(check.out)} is its input plus a sinusoid "
                         f"table of amplitude {own.amplitude:.4g} where correct code adds one of amplitude 1 "
                         f"({own.words})")
    return Fit(False, "; ".join([*details, own.words]))


def _sin_for_cos(check: SinusoidalPositions, s: TensorSource) -> Fit:
    """The paper's or tensor2tensor's table with sin where cos belongs (``pe[:, 1::2] = torch.sin(...)``: every column
    a sine), added once to the input, the embedding's factor fitted as for the correct tables."""
    out, before = s.t(check.out), s.t(check.before)
    details = []
    for layout, table in _table_layouts(out.shape[-2], out.shape[-1], cos=torch.sin).items():
        fitted = _fit_positions(out, before, table, times=1)
        fits, detail = close(out, fitted.prediction, f"vs its input plus {layout} with sin where cos belongs"
                             + (f" ({fitted.words})" if fitted.words else ""))
        if fits:
            return Fit(True, f"your position table has sin where cos belongs: your {s.name(check.out)} is its input "
                             f"plus {layout} with every cosine replaced by a sine ({detail})")
        details.append(detail)
    return Fit(False, "; ".join(details))


@dataclass(frozen=True, kw_only=True)
class SinusoidalPositions(Check):
    """Tensors only: ``out`` is ``before`` (times a factor of the embedding's own, fitted: 1, or √C where the lookup is
    scaled on the way) plus a sinusoidal table sin/cos(pos / 10000^(2i/C)), laid out as the paper interleaves it or
    as tensor2tensor concatenates it (the sines, then the cosines); failing both, any table of one sinusoid per
    feature, of amplitude 1 and frequencies of its own, fitted (checks/sinusoids.py), the paper's table named as what
    it is not."""
    CLAIM = "is the embeddings plus a sinusoidal position table"

    BUG_FORMS = (BugForm("positions added twice", "the added term vs twice the table", _added_twice),
                 BugForm("sin where cos belongs", "the added term vs a table whose cosines are sines", _sin_for_cos))
    # a trace's: the line's lookup of a learned position table (BART's), read in the table's place
    TRACE = TraceUse(also_calls=frozenset({ModuleKind.EMBEDDING}))

    OPTIONAL = (("ids",),)

    out: Ref = THIS
    before: Ref
    ids: Ref | None = None  # the token IDs, from which the lookup ``before`` is derived where it is not captured

    def bound_by(self, calls: CallBinder[BoundT]) -> BoundT | None:
        """Bound to the learned position table the traced line looked up, where it called one."""
        return calls.positions(self)

    def run(self, s: TensorSource) -> CheckResult:
        """Checked as declared; where the lookup ``before`` is not captured but the token IDs are, on the lookup
        derived from this step and the IDs (``lookup_under``), said so."""
        if self.ids is None or s.has(self.before) or not (s.has(self.ids) and s.has(self.out)) or not isinstance(
                s, TensorDict) or (found := lookup_under(s.t(self.out), s.t(self.ids))) is None:
            return super().run(s)
        lookup, table = found
        result = super().run(s.with_tensors({**s.tensors, s.name(self.before): lookup}, dict(s.modules),
                                            dict(s.params)))
        return replace(result, detail=f"{result.detail} ({s.name(self.before)} derived from {s.name(self.ids)}: this "
                                      f"step minus {table}, one row per token ID, the same wherever an ID stands)")

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        out, before = s.t(self.out), s.t(self.before)
        details = []
        for layout, table in _table_layouts(*out.shape[-2:]).items():
            fitted = _fit_positions(out, before, table, times=1)
            passed, detail = close(out, fitted.prediction, f"its input plus {layout}"
                                   + (f", {fitted.words}" if fitted.words else "") + ", vs the recorded tensor")
            if passed:
                return "the added term is the sinusoidal encoding", True, detail
            details.append(detail)
        own = own_table(out, before)
        if own.fits and abs(own.amplitude - 1) <= 1e-3:
            return "the added term is the sinusoidal encoding", True, (
                f"a sinusoid table of frequencies of its own: {own.words} (not the standard tables: "
                + "; ".join(details) + ")")
        return "the added term is the sinusoidal encoding", False, "; ".join([*details, own.words])


@dataclass(frozen=True, kw_only=True)
class HandedOverOrPositions(SameTensor):
    """A layer's input is what the previous stage handed over (``SameTensor``); where that is not captured and is the
    stage's own embedding with positions (the decoder's first layer reads the target lookup plus the sinusoid table,
    which no snapshot of the catalogue shows), the step is checked as that: positions added to the lookup derived
    from the token IDs (``lookup_under``, as #5 is for the source side). Elsewhere (a later layer's input: the stream
    minus a table leaves no row per ID) it stays not checkable."""

    OPTIONAL = (("ids",),)

    ids: Ref | None = None  # the stage's token IDs, from which its lookup is derived

    def run(self, s: TensorSource) -> CheckResult:
        if (self.ids is None or s.has(self.source) or not (s.has(self.ids) and s.has(self.out))
                or not isinstance(s, TensorDict) or lookup_under(s.t(self.out), s.t(self.ids)) is None):
            return super().run(s)
        lookup = Ref(f"{s.name(self.source)}@lookup")
        result = SinusoidalPositions(out=self.out, before=lookup, ids=self.ids).run(s)
        return replace(result, detail=f"no snapshot shows {s.name(self.source)}, what the previous stage handed over: "
                                      f"read as the lookup of {s.name(self.ids)} plus positions; {result.detail}")


CHECKS: Registry[type[Check]] = Registry("check",
                                         [(cls.key(), cls) for cls in (TokenIds, EmbeddingTableRows,
                                                                       SinusoidalPositions, HandedOverOrPositions)])
