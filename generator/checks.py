"""Checks that a captured tensor is what its page claims, recomputed independently.

A check is a frozen dataclass: its fields are its parameters, typed. Fields typed ``Ref`` (or
``tuple[Ref, ...]``) are the recorded tensors it reads, its ``inputs()``; ``ModuleRef`` and
``ParamRef`` fields read the model's weights, ``InputRef`` fields a fact of the run's input; any
other field is a plain value. ``verify(source)`` recomputes the claim in float64 from a
``TensorSource`` (generator/sources.py) and returns (claim, passed, evidence in words); ``run(source)``
wraps it in a ``CheckResult`` that is passed, failed, or not checkable (naming what is missing: a
tensor the source lacks, or weights a source of captured tensors alone does not have).

A snapshot's check may leave ``out`` as ``THIS``: the snapshot binds it to the tensor it centres on.

    @dataclass(frozen=True, kw_only=True)
    class RowsSumToOne(Check):
        out: Ref = THIS
        def verify(self, s: TensorSource) -> tuple[str, bool, str]:
            error = float((s.t(self.out).sum(-1) - 1).abs().max())
            return "rows sum to 1", error <= TOLERANCE, f"largest deviation {error:.1e}"

Registries are explicit: ``CHECKS`` below lists the generic checks; a report's checks.py lists its
own in its ``CHECKS`` and the report merges both (a second check under a taken name is refused).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import re
import typing
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from generator.indexing import parse_index
from generator.registry import Registry
from generator.sources import InputRef, ModuleRef, NotCheckable, ParamRef, Ref, TensorSource
from generator.tensors import fmt

# float32 forward passes against float64 recomputation: differences are rounding.
TOLERANCE = 1e-4

THIS = Ref("")  # in a snapshot's check: the tensor the snapshot centres on (bound by the Snapshot)

PASSED, FAILED, NOT_CHECKABLE = "passed", "failed", "not checkable"


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: its claim, whether it held, and the evidence in words.

    ``status`` is "passed", "failed" or "not checkable"; a check that could not run names what
    it lacked in ``missing`` (record names, modules, parameters or inputs) and is not ``passed``.
    """

    name: str
    passed: bool
    detail: str
    status: str = ""
    missing: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.status:
            object.__setattr__(self, "status", PASSED if self.passed else FAILED)
        if self.status not in (PASSED, FAILED, NOT_CHECKABLE) or (self.status == PASSED) != bool(self.passed):
            raise ValueError(f"inconsistent check result: status {self.status!r}, passed {self.passed!r}")

    @property
    def checkable(self) -> bool:
        return self.status != NOT_CHECKABLE

    @classmethod
    def combined(cls, results: list[CheckResult]) -> CheckResult:
        """One result for several checks of a snapshot: passed when all passed, not checkable when none failed but one could not run."""
        if len(results) == 1:
            return results[0]
        status = FAILED if any(r.status == FAILED for r in results) else NOT_CHECKABLE if any(not r.checkable for r in results) else PASSED
        return cls(name="; ".join(r.name for r in results), passed=status == PASSED, detail=" — ".join(r.detail for r in results),
                   status=status, missing=tuple(m for r in results for m in r.missing))


# What a check field is, read from its type: a tensor, several tensors, a module, a parameter, an input, or a plain value.
TENSOR, TENSORS, MODULE, PARAMETER, INPUT, VALUE = "tensor", "tensors", "module", "parameter", "input", "value"
_KIND_OF_TYPE = {Ref: TENSOR, ModuleRef: MODULE, ParamRef: PARAMETER, InputRef: INPUT}


def field_kind(annotation: Any) -> str:
    """The kind of a field from its (resolved) type: ``Ref`` -> tensor, ``tuple[Ref, ...]`` -> tensors, ..."""
    if annotation in _KIND_OF_TYPE:
        return _KIND_OF_TYPE[annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is tuple and args and args[0] is Ref:
        return TENSORS
    if len(args) == 2 and type(None) in args:  # Ref | None, InputRef | None ...: optional
        other = next(a for a in args if a is not type(None))
        if other in _KIND_OF_TYPE:
            return _KIND_OF_TYPE[other]
    return VALUE


class Typed:
    """Shared by checks and drawings: parameters read from dataclass fields, tensor inputs from their types."""

    @classmethod
    def key(cls) -> str:
        """The registry name: the class name in snake case (LinearHeads -> linear_heads)."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()

    @classmethod
    @functools.cache
    def parameters(cls) -> dict[str, str]:
        """Field name -> kind (tensor, tensors, module, parameter, input, value), from the fields' types."""
        hints = typing.get_type_hints(cls)
        return {f.name: field_kind(hints[f.name]) for f in dataclasses.fields(cls)}

    def __post_init__(self) -> None:
        for name, kind in self.parameters().items():
            value = getattr(self, name)
            expected = {TENSOR: Ref, MODULE: ModuleRef, PARAMETER: ParamRef, INPUT: InputRef}.get(kind)
            if kind == TENSORS:
                if not isinstance(value, tuple) or not all(isinstance(v, Ref) for v in value):
                    raise TypeError(f"{type(self).__name__}.{name} takes a tuple of Ref, got {value!r}")
            elif expected is not None and not (value is None or isinstance(value, expected)):
                raise TypeError(f"{type(self).__name__}.{name} takes a {expected.__name__}, got {value!r}")

    def inputs(self) -> tuple[Ref, ...]:
        """The recorded tensors this reads, from the fields typed ``Ref`` or ``tuple[Ref, ...]``, in field order."""
        refs: list[Ref] = []
        for name, kind in self.parameters().items():
            value = getattr(self, name)
            if kind == TENSOR and value is not None:
                refs.append(value)
            elif kind == TENSORS:
                refs.extend(value)
        return tuple(refs)

    def refs_of(self, kind: str) -> tuple[Any, ...]:
        """The values of the fields of one kind (module, parameter, input)."""
        return tuple(getattr(self, name) for name, k in self.parameters().items() if k == kind and getattr(self, name) is not None)

    def bound(self, main: Ref) -> Any:
        """A copy with every ``THIS`` replaced by ``main``, the snapshot's own tensor."""
        changes = {name: main for name, kind in self.parameters().items() if kind == TENSOR and getattr(self, name) is THIS}
        return dataclasses.replace(self, **changes) if changes else self


@dataclass(frozen=True, kw_only=True)
class Check(Typed):
    """Base of every check. Subclasses are frozen, keyword-only dataclasses that implement ``verify``; a check that
    reads weights says so by its ModuleRef/ParamRef fields, and is not checkable on a source without a model."""

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        """(the claim, whether it holds, the evidence in words), recomputed in float64 from ``s``."""
        raise NotImplementedError

    def run(self, s: TensorSource) -> CheckResult:
        """Verify against ``s``: passed or failed, or not checkable when a tensor, the weights or an input is missing."""
        missing = tuple(s.name(ref) for ref in self.inputs() if not s.has(ref))
        if missing:
            return CheckResult(name=self.key(), passed=False, status=NOT_CHECKABLE, missing=missing,
                               detail=f"not checkable: the source has no {', '.join(missing)}")
        try:
            name, passed, detail = self.verify(s)
        except NotCheckable as exc:
            return CheckResult(name=self.key(), passed=False, status=NOT_CHECKABLE, missing=(exc.missing,),
                               detail=f"not checkable: {exc}")
        return CheckResult(name=name, passed=bool(passed), detail=detail)


def close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> tuple[bool, str]:
    if actual.shape != expected.shape:
        return False, f"{what}: shape {tuple(actual.shape)} differs from {tuple(expected.shape)}"
    if actual.numel() == 0:
        return True, f"{what}: nothing to compare (no values)"
    diff = (actual - expected).abs()
    magnitude = expected.abs()
    if not bool(torch.isfinite(diff).all()):  # only then look for infinities on both sides (the slow path)
        both_inf = torch.isinf(actual) & torch.isinf(expected) & (torch.sign(actual) == torch.sign(expected))
        diff = diff.masked_fill(both_inf, 0.0)
        magnitude = magnitude.masked_fill(~torch.isfinite(expected), 0.0)
    worst = float(diff.max())
    scale = max(1.0, float(magnitude.max()))
    passed = math.isfinite(worst) and worst <= TOLERANCE * scale
    return passed, f"{what}: largest difference {worst:.1e} over {actual.numel():,} values (tolerance {TOLERANCE * scale:.0e})"


def linear(s: TensorSource, module: ModuleRef, x: torch.Tensor) -> torch.Tensor:
    layer = s.module(module)
    weight = layer.weight.detach().double().cpu()
    bias = layer.bias.detach().double().cpu() if layer.bias is not None else None
    return F.linear(x, weight, bias)


# ---------------------------------------------------------------------------- lookups and generic algebra (tensors only, unless a field reads weights)


@dataclass(frozen=True, kw_only=True)
class EmbeddingLookup(Check):
    """Each position is its ID's row of the captured table (tensors only)."""

    out: Ref = THIS
    ids: Ref
    table: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        expected = s.t(self.table)[s.t(self.ids).long()]  # (B, L) ids -> (B, L, C) rows
        passed, detail = close(s.t(self.out), expected, "each position equals its ID's table row")
        return "lookup returns the table rows of the IDs", passed, detail


@dataclass(frozen=True, kw_only=True)
class SameTensor(Check):
    """``out`` equals ``source`` (e.g. a layer's input is what the previous stage handed over)."""

    out: Ref = THIS
    source: Ref
    claim: str

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        passed, detail = close(s.t(self.out), s.t(self.source), self.claim)
        return self.claim, passed, detail


@dataclass(frozen=True, kw_only=True)
class LinearOf(Check):
    """``out`` is ``module`` (a Linear) applied to ``x``, after an optional ReLU; ``index`` compares a slice."""

    out: Ref = THIS
    x: Ref
    module: ModuleRef
    activation: str | None = None
    index: str | None = None

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        inp = s.t(self.x)
        if self.activation == "relu":
            inp = F.relu(inp)
        expected, actual = linear(s, self.module, inp), s.t(self.out)
        if self.index:
            expected, actual = expected[parse_index(self.index)], actual[parse_index(self.index)]
        name = s.name(self.module)
        passed, detail = close(actual, expected, f"recomputed x·Wᵀ + b with {name}'s weights")
        return f"equals {name} applied to its input", passed, detail


@dataclass(frozen=True, kw_only=True)
class SumOf(Check):
    """A residual sum: ``out`` is the sum of ``operands`` (tensors only)."""

    out: Ref = THIS
    operands: tuple[Ref, ...]

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        expected = sum(s.t(ref) for ref in self.operands)
        passed, detail = close(s.t(self.out), expected, "operands added up vs the recorded sum")
        return "the operands add up to the residual sum", passed, detail


@dataclass(frozen=True, kw_only=True)
class LayerNormOf(Check):
    """``out`` is the LayerNorm ``module`` applied to ``x``, and the normalised rows have mean 0, std 1."""

    out: Ref = THIS
    x: Ref
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        ln = s.module(self.module)
        inp = s.t(self.x)
        expected = F.layer_norm(inp, ln.normalized_shape, ln.weight.detach().double().cpu(), ln.bias.detach().double().cpu(), ln.eps)
        passed, detail = close(s.t(self.out), expected, "recomputed LayerNorm of its input")
        normalised = F.layer_norm(inp, ln.normalized_shape, eps=ln.eps)
        detail += (f"; before the affine step every position has mean {fmt(float(normalised.mean(-1).abs().max()), 6)} (max |mean|) "
                   f"and std {fmt(float(normalised.std(-1, unbiased=False).mean()), 4)}")
        return "equals LayerNorm(residual sum)", passed, detail


@dataclass(frozen=True, kw_only=True)
class LayerNormStatistics(Check):
    """Tensors only: with no affine step (weight 1, bias 0) every position of ``out`` has mean 0 and standard deviation 1,
    and ``out`` is ``x`` normalised; for a source without the model's LayerNorm weights."""

    out: Ref = THIS
    x: Ref
    eps: float = 1e-5

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        got, inp = s.t(self.out), s.t(self.x)
        expected = F.layer_norm(inp, inp.shape[-1:], eps=self.eps)
        passed, detail = close(got, expected, "x normalised per position (no affine step)")
        mean, std = float(got.mean(-1).abs().max()), float(got.std(-1, unbiased=False).mean())
        return "every position normalised to mean 0, std 1", passed, detail + f"; max |mean| {fmt(mean, 6)}, mean std {fmt(std, 4)}"


@dataclass(frozen=True, kw_only=True)
class ResidualLayerNorm(Check):
    """Post-norm: ``out`` is LayerNorm ``module`` of the sum of ``operands``."""

    out: Ref = THIS
    operands: tuple[Ref, ...]
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        ln = s.module(self.module)
        total = sum(s.t(ref) for ref in self.operands)
        expected = F.layer_norm(total, ln.normalized_shape, ln.weight.detach().double().cpu(), ln.bias.detach().double().cpu(), ln.eps)
        passed, detail = close(s.t(self.out), expected, "recomputed LayerNorm(input + sublayer output)")
        return "equals LayerNorm(input + sublayer output)", passed, detail


@dataclass(frozen=True, kw_only=True)
class HeadsRejoin(Check):
    """Head split/merge (tensors only): each per-head tensor (B, h, L, hs) re-joins to its full projection (B, L, C)."""

    heads: tuple[Ref, ...]
    full: tuple[Ref, ...]

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        details, passed = [], True
        for h_ref, f_ref in zip(self.heads, self.full):
            h = s.t(h_ref)  # (B, h, L, hs)
            B, H, L, hs = h.shape
            ok, _ = close(h.transpose(1, 2).reshape(B, L, H * hs), s.t(f_ref), "")  # (B, h, L, hs) -> (B, L, C)
            passed &= ok
            details.append(f"{s.name(h_ref)} {'re-joins' if ok else 'does NOT re-join'} to {s.name(f_ref)}")
        return "heads re-join to the full projections", passed, "; ".join(details) + " (transpose heads back, then merge h·hs)"


@dataclass(frozen=True, kw_only=True)
class ScaledScores(Check):
    """Tensors only: ``out`` = Q·Kᵀ/√hs from the per-head queries and keys."""

    out: Ref = THIS
    q_heads: Ref
    k_heads: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        q, k = s.t(self.q_heads), s.t(self.k_heads)
        expected = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        passed, detail = close(s.t(self.out), expected, f"recomputed Q·Kᵀ/√{q.shape[-1]}")
        return "equals Q·Kᵀ / √hs", passed, detail


@dataclass(frozen=True, kw_only=True)
class SoftmaxRows(Check):
    """Tensors only: rows of ``out`` (over the last axis, the keys) are the softmax of ``scores``, sum to 1, never negative;
    ``causal``: no weight on a later position."""

    out: Ref = THIS
    scores: Ref
    causal: bool = False

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        weights = s.t(self.out)
        row_sums = weights.sum(-1)
        worst_sum = float((row_sums - 1).abs().max())
        passed, detail = close(weights, torch.softmax(s.t(self.scores), dim=-1), "recomputed softmax of the scores")
        passed &= worst_sum <= TOLERANCE and bool((weights >= 0).all())
        detail = f"all {row_sums.numel():,} rows sum to 1 (largest deviation {worst_sum:.1e}), no weight is negative; " + detail
        if self.causal:
            T = weights.shape[-1]
            above = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            future = float(weights[..., above].abs().max()) if above.any() else 0.0
            passed &= future == 0.0
            detail += f"; weight on future positions: {future:g}"
        return "rows are probability distributions", passed, detail


@dataclass(frozen=True, kw_only=True)
class CausalMask(Check):
    """Tensors only: an additive causal mask is 0 on and below the diagonal and −inf above."""

    out: Ref = THIS

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        mask = s.t(self.out)
        T = mask.shape[-1]
        above = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1).expand_as(mask)
        zeros_below = bool((mask[~above] == 0).all())
        inf_above = bool(torch.isneginf(mask[above]).all())
        return "0 on and below the diagonal, −inf above", zeros_below and inf_above, (
            f"{int((~above).sum())} allowed entries are exactly 0: {zeros_below}; "
            f"{int(above.sum())} future entries are −inf: {inf_above}"
        )


@dataclass(frozen=True, kw_only=True)
class ContextConcat(Check):
    """Tensors only: ``out`` (B, T, C) is probs·V per head with the heads concatenated."""

    out: Ref = THIS
    probs: Ref
    v_heads: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        ctx = s.t(self.probs) @ s.t(self.v_heads)  # (B, h, T, hs)
        B, H, T, hs = ctx.shape
        passed, detail = close(s.t(self.out), ctx.transpose(1, 2).reshape(B, T, H * hs), "recomputed (weights·V) per head, heads concatenated")  # -> (B, T, C)
        return "equals the heads' weights·V, concatenated", passed, detail


@dataclass(frozen=True, kw_only=True)
class ContextHeads(Check):
    """Tensors only: ``out`` (B, h, T, hs) is probs·V."""

    out: Ref = THIS
    probs: Ref
    v_heads: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        passed, detail = close(s.t(self.out), s.t(self.probs) @ s.t(self.v_heads), "recomputed attention probabilities @ V")
        return "equals probabilities @ V", passed, detail


# ---------------------------------------------------------------------------- rows, parameters, blocks


@dataclass(frozen=True, kw_only=True)
class TokensConcat(Check):
    """Tensors only: row 0 of ``out`` is the class token ``cls``, the rest the ``patches``."""

    out: Ref = THIS
    cls: Ref
    patches: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        expected = torch.cat([s.t(self.cls), s.t(self.patches)], dim=1)
        passed, detail = close(s.t(self.out), expected, "row 0 vs the class token, rows 1… vs the patch embeddings")
        return "row 0 is the class token, the rest are the patch embeddings", passed, detail


@dataclass(frozen=True, kw_only=True)
class RowEquals(Check):
    """Tensors only: ``out`` is row ``row`` (axis 1) of ``source``."""

    out: Ref = THIS
    source: Ref
    row: int
    claim: str

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        passed, detail = close(s.t(self.out), s.t(self.source)[:, self.row], self.claim)
        return self.claim, passed, detail


@dataclass(frozen=True, kw_only=True)
class PlusParameter(Check):
    """``out`` is ``x`` plus the learned ``parameter`` (e.g. position embeddings)."""

    out: Ref = THIS
    x: Ref
    parameter: ParamRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        param = s.parameter(self.parameter)
        passed, detail = close(s.t(self.out), s.t(self.x) + param, f"input + {self.parameter}")
        return "equals its input plus the learned position embeddings", passed, detail


@dataclass(frozen=True, kw_only=True)
class Probabilities(Check):
    """Tensors only: ``out`` is the softmax of ``logits`` and sums to 1."""

    out: Ref = THIS
    logits: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        probs = s.t(self.out)
        total = float(probs.sum(-1).max())
        passed, detail = close(probs, torch.softmax(s.t(self.logits), dim=-1), "recomputed softmax of the logits")
        passed &= abs(total - 1) <= TOLERANCE
        return "probabilities sum to 1", passed, f"sum = {total:.6f}; " + detail


@dataclass(frozen=True, kw_only=True)
class EqualsParameter(Check):
    """``out`` is the learned ``parameter``, repeated over the batch."""

    out: Ref = THIS
    parameter: ParamRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        value = s.t(self.out)
        passed, detail = close(value, s.parameter(self.parameter).expand_as(value), f"vs the learned parameter {self.parameter}")
        return f"is the learned parameter {self.parameter}, repeated per image", passed, detail


@dataclass(frozen=True, kw_only=True)
class LinearHeads(Check):
    """``out`` (B, h, N, hs) is part ``part`` (0 q, 1 k, 2 v) of the fused projection ``module`` of ``x``, split into heads."""

    out: Ref = THIS
    x: Ref
    module: ModuleRef
    part: int

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        fused = linear(s, self.module, s.t(self.x))  # (B, N, 3C): q, k, v side by side
        B, N, C3 = fused.shape
        C = C3 // 3
        got = s.t(self.out)  # (B, h, N, hs)
        H = got.shape[1]
        expected = fused[..., self.part * C:(self.part + 1) * C].reshape(B, N, H, C // H).transpose(1, 2)  # (B, N, C) -> (B, h, N, hs)
        passed, detail = close(got, expected, f"recomputed {'qkv'[self.part]} = LN(x)·W{'qkv'[self.part]}ᵀ + b, split into {H} heads")
        return f"equals the {'QKV'[self.part]} part of the fused projection, split into heads", passed, detail


@dataclass(frozen=True, kw_only=True)
class GeluOfLinear(Check):
    """``out`` is GELU of the Linear ``module`` applied to ``x``."""

    out: Ref = THIS
    x: Ref
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        expected = F.gelu(linear(s, self.module, s.t(self.x)))
        passed, detail = close(s.t(self.out), expected, "recomputed GELU(x·W₁ᵀ + b₁)")
        return "equals GELU(fc1(input))", passed, detail


@dataclass(frozen=True, kw_only=True)
class ResidualBlock(Check):
    """``out`` is the whole ``block`` re-run in float64 on its recorded input ``x``."""

    out: Ref = THIS
    x: Ref
    block: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        module = copy.deepcopy(s.module(self.block)).double().cpu()
        with torch.no_grad():
            expected = module(s.t(self.x))
        passed, detail = close(s.t(self.out), expected, "the block re-run in float64 on its recorded input")
        return "equals the block applied to its input", passed, detail


CHECKS: Registry[type[Check]] = Registry("check", [(cls.key(), cls) for cls in (
    EmbeddingLookup, SameTensor, LinearOf, SumOf, LayerNormOf, LayerNormStatistics, ResidualLayerNorm, HeadsRejoin, ScaledScores,
    SoftmaxRows, CausalMask, ContextConcat, ContextHeads, TokensConcat, RowEquals, PlusParameter, Probabilities, EqualsParameter, LinearHeads,
    GeluOfLinear, ResidualBlock,
)])
"""The generic checks, any report may use them; a report's own are in its checks.py ``CHECKS``."""
