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
from generator.sources import InputRef, MissingTensor, ModuleRef, NotCheckable, ParamRef, Ref, TensorSource
from generator.tensors import fmt

# float32 forward passes against float64 recomputation: differences are rounding.
TOLERANCE = 1e-4
GELU_MINIMUM = -0.1701  # GELU's minimum, −0.16997 (−0.17004 with the tanh approximation), at x ≈ −0.75

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
    parts: tuple[CheckResult, ...] = ()  # the results it combines (``combined``), when several
    lacks: tuple[NotCheckable, ...] = dataclasses.field(default=(), compare=False, repr=False)  # ``missing``, typed: what stopped it

    def __post_init__(self) -> None:
        if not self.status:
            object.__setattr__(self, "status", PASSED if self.passed else FAILED)
        if self.status not in (PASSED, FAILED, NOT_CHECKABLE) or (self.status == PASSED) != bool(self.passed):
            raise ValueError(f"inconsistent check result: status {self.status!r}, passed {self.passed!r}")

    @property
    def checkable(self) -> bool:
        return self.status != NOT_CHECKABLE

    @classmethod
    def combined(cls, results: list[CheckResult], *, judge_checkable: bool = False) -> CheckResult:
        """One result for several checks of a snapshot, in ``parts``: failed when one failed; passed when all passed;
        else not checkable. Its name is the claims that decided it (the failed ones, the passed ones; all when not checkable). ``judge_checkable``: judged by the checks that could run, passed when one did and none
        failed (a trace, whose source never has the weights); the others stay in ``parts`` and ``missing``."""
        if len(results) == 1:
            return results[0]
        ran = [r for r in results if r.checkable]
        if any(r.status == FAILED for r in results):
            status = FAILED
        elif ran and (judge_checkable or len(ran) == len(results)):
            status = PASSED
        else:
            status = NOT_CHECKABLE
        deciding = results if status == NOT_CHECKABLE else [r for r in results if r.status == status]  # what the verdict names
        return cls(name="; ".join(dict.fromkeys(r.name for r in deciding)), passed=status == PASSED,
                   detail=" — ".join(f"{r.name}: {r.detail}" for r in results), status=status,
                   missing=tuple(dict.fromkeys(m for r in results for m in r.missing)), parts=tuple(results),
                   lacks=tuple(lack for r in results for lack in r.lacks))

    def json(self) -> dict[str, Any]:
        """As snapshots.json lists it: ``passed`` is true, false, or null when not checkable."""
        return {"name": self.name, "passed": self.passed if self.checkable else None, "detail": self.detail, "status": self.status}


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
    reads weights says so by its ModuleRef/ParamRef fields, and is not checkable on a source without a model, unless
    its claim has a form that tensors alone decide (LayerNorm with a fitted gain and bias, GELU's range), which it then
    checks and names instead."""

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        """(the claim, whether it holds, the evidence in words), recomputed in float64 from ``s``."""
        raise NotImplementedError

    # True where the claim has a form that tensors alone decide (its verify catches the weights' NotCheckable)
    WEIGHTS_OPTIONAL: typing.ClassVar[bool] = False

    def run(self, s: TensorSource) -> CheckResult:
        """Verify against ``s``: passed or failed, or not checkable when a tensor, the weights or an input is missing;
        a check missing tensors names the weights it would also need and ``s`` lacks, so all of what it needs is said."""
        lacks: tuple[NotCheckable, ...] = tuple(MissingTensor(s.name(ref), "not in the source") for ref in self.inputs() if not s.has(ref))
        if lacks:
            missing = tuple(lack.missing for lack in lacks)
            lacks += self._lacking_weights(s)
            return CheckResult(name=self.key(), passed=False, status=NOT_CHECKABLE, missing=tuple(lack.missing for lack in lacks),
                               detail=f"not checkable: the source has no {', '.join(missing)}", lacks=lacks)
        try:
            name, passed, detail = self.verify(s)
        except NotCheckable as exc:
            return CheckResult(name=self.key(), passed=False, status=NOT_CHECKABLE, missing=(exc.missing,),
                               detail=f"not checkable: {exc}", lacks=(exc,))
        return CheckResult(name=name, passed=bool(passed), detail=detail)


    def _lacking_weights(self, s: TensorSource) -> tuple[NotCheckable, ...]:
        """The modules and parameters this reads that ``s`` does not have (none when the claim can do without them)."""
        if self.WEIGHTS_OPTIONAL:
            return ()
        lacks = []
        for kind, get in ((MODULE, s.module), (PARAMETER, s.parameter)):
            for ref in self.refs_of(kind):
                try:
                    get(ref)
                except NotCheckable as exc:
                    lacks.append(exc)
        return tuple(lacks)


class UnfittableWeights(NotCheckable):
    """Without the weights, too few positions for a fitted gain and bias to prove anything."""


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
    """Tensors only: each position is its ID's row of the captured ``table``; with ``sqrt_scaled`` the rows may also be
    multiplied by √C, as the paper does. A ``table`` holding only a leading corner of the table (what a debugger shows of
    a big one) is compared where it reaches: the positions whose ID is one of its rows, over its columns."""

    out: Ref = THIS
    ids: Ref
    table: Ref
    sqrt_scaled: bool = False

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        claim = "lookup returns the table rows of the IDs" + (" (times √C or not)" if self.sqrt_scaled else "")
        emb, table, index = s.t(self.out), s.t(self.table), s.t(self.ids).long().reshape(-1)
        R, K = table.shape
        C = emb.shape[-1]
        rows = emb.reshape(-1, C)  # (B, L, C) -> (B·L, C): one row per position
        if rows.shape[0] != index.numel():
            return claim, False, f"{index.numel()} IDs for {rows.shape[0]} positions"
        covered = index < R
        if not bool(covered.any()):
            raise NotCheckable(s.name(self.table), f"it holds rows 0…{R - 1} only, and no ID is among them")
        part = "" if bool(covered.all()) and K == C else (
            f" ({int(covered.sum())} of {index.numel()} positions have an ID among the {R} rows held, compared over {K} of {C} features)")
        got, want = rows[covered, :K], table[index[covered]]
        for scale, name in ((1.0, ""), (math.sqrt(C), f" × √{C}"))[: 2 if self.sqrt_scaled else 1]:
            passed, detail = close(got, want * scale, f"each position vs its ID's table row{name}{part}")
            if passed:
                break
        return claim, passed, detail


@dataclass(frozen=True, kw_only=True)
class SameTensor(Check):
    """``out`` equals ``source`` (e.g. a layer's input is what the previous stage handed over). ``or_layer_norm``: or is
    a LayerNorm of it (gain and bias fitted): a model may normalise the embeddings before layer 1, or end a pre-norm
    stack with a final LayerNorm, and say so."""

    out: Ref = THIS
    source: Ref
    claim: str
    or_layer_norm: bool = False

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        passed, detail = close(s.t(self.out), s.t(self.source), f"{s.name(self.out)} vs {s.name(self.source)}")
        if not passed and self.or_layer_norm:
            try:
                _, normalised, fitted = _fitted_layer_norm(s.t(self.out), s.t(self.source), s.name(self.source))
            except UnfittableWeights:
                normalised = False
            if normalised:
                return self.claim + ", normalised", True, f"a LayerNorm between the two recognised: {fitted}"
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


def _layer_norm(s: TensorSource, out: Ref, total: torch.Tensor, module: ModuleRef, of: str) -> tuple[str, bool, str]:
    """``out`` is the LayerNorm ``module`` of ``total``, recomputed with the model's weights; from tensors alone (a
    source without weights) with the per-feature gain and bias fitted by least squares, which passes only when every
    feature of ``out`` is one affine function of ``total`` normalised per position."""
    got = s.t(out)
    try:
        ln = s.module(module)
    except NotCheckable:
        return _fitted_layer_norm(got, total, of)
    expected = F.layer_norm(total, ln.normalized_shape, ln.weight.detach().double().cpu(), ln.bias.detach().double().cpu(), ln.eps)
    passed, detail = close(got, expected, f"recomputed LayerNorm of {of} with {s.name(module)}'s weights")
    normalised = F.layer_norm(total, ln.normalized_shape, eps=ln.eps)
    detail += (f"; before the affine step every position has mean {fmt(float(normalised.mean(-1).abs().max()), 6)} (max |mean|) "
               f"and std {fmt(float(normalised.std(-1, unbiased=False).mean()), 4)}")
    return f"equals LayerNorm({of})", passed, detail


# The epsilons LayerNorms use (PyTorch's default; 1e-6 in torchvision's ViT and many ports; 1e-12 in BERT-style code):
# with inputs of small variance (a class token and small position embeddings) the epsilon shows in the output.
LAYER_NORM_EPSILONS = (1e-5, 1e-6, 1e-12)


def _fitted_layer_norm(got: torch.Tensor, total: torch.Tensor, of: str) -> tuple[str, bool, str]:
    """``got`` is some LayerNorm of ``total``: the gain and bias fitted per feature by least squares, for the usual
    epsilons (the first that fits is named when it is not PyTorch's default)."""
    if got.shape != total.shape:
        return f"equals LayerNorm({of})", False, f"shape {tuple(got.shape)} differs from {tuple(total.shape)}"
    if total.reshape(-1, total.shape[-1]).shape[0] < 3:
        positions = total.reshape(-1, total.shape[-1]).shape[0]
        raise UnfittableWeights("the LayerNorm's weights", f"{positions} position{'s' if positions != 1 else ''}: a gain and a bias per "
                           "feature fit anything, and the tensors were captured without the weights")
    tried = []
    for eps in LAYER_NORM_EPSILONS:
        normed = F.layer_norm(total, total.shape[-1:], eps=eps)
        x, y = normed.reshape(-1, normed.shape[-1]), got.reshape(-1, got.shape[-1])  # (positions, C)
        xm, ym = x.mean(0), y.mean(0)
        gain = ((x - xm) * (y - ym)).mean(0) / ((x - xm) ** 2).mean(0).clamp_min(1e-12)
        bias = ym - gain * xm
        epsilon = "" if eps == LAYER_NORM_EPSILONS[0] else f", ε = {eps:g}"
        tried.append(close(got, normed * gain + bias, f"LayerNorm of {of} with the gain and bias fitted per feature (no weights "
                                                      f"captured; fitted gain {float(gain.mean()):.3f} on average{epsilon})"))
        if tried[-1][0]:
            break
    passed, detail = tried[-1] if tried[-1][0] else tried[0]
    return f"equals LayerNorm({of})", passed, detail


@dataclass(frozen=True, kw_only=True)
class LayerNormOf(Check):
    """``out`` is the LayerNorm ``module`` applied to ``x`` (without the weights: some LayerNorm of ``x``, gain and bias fitted)."""

    WEIGHTS_OPTIONAL = True

    out: Ref = THIS
    x: Ref
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        return _layer_norm(s, self.out, s.t(self.x), self.module, "its input")


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
    """Post-norm: ``out`` is LayerNorm ``module`` of the sum of ``operands`` (without the weights: gain and bias fitted)."""

    WEIGHTS_OPTIONAL = True

    out: Ref = THIS
    operands: tuple[Ref, ...]
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        return _layer_norm(s, self.out, sum(s.t(ref) for ref in self.operands), self.module, "input + sublayer output")


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


def _heads(x: torch.Tensor, h: int) -> torch.Tensor:
    """A per-head tensor as it is, or a whole one (B, L, C) split into ``h`` heads."""
    if x.dim() == 3:
        B, L, C = x.shape
        return x.reshape(B, L, h, C // h).transpose(1, 2)  # (B, L, C) -> (B, h, L, hs)
    return x


@dataclass(frozen=True, kw_only=True)
class ScaledScores(Check):
    """Tensors only: ``out`` = Q·Kᵀ/√hs per head, from the queries ``q`` and keys ``k``, per head (B, h, L, hs) or whole
    (B, L, C), then split into the scores' heads. Scores that are Q·Kᵀ without the scaling are said to be."""

    out: Ref = THIS
    q: Ref
    k: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        scores = s.t(self.out)
        q, k = _heads(s.t(self.q), scores.shape[1]), _heads(s.t(self.k), scores.shape[1])
        hs = q.shape[-1]
        product = q @ k.transpose(-2, -1)  # (B, h, Lq, Lk)
        passed, detail = close(scores, product / math.sqrt(hs), f"recomputed Q·Kᵀ/√{hs} per head")
        if not passed and close(scores, product, "")[0]:
            detail += f"; the scores equal Q·Kᵀ without the 1/√{hs} (= {1 / math.sqrt(hs):.4f}) scaling"
        return "equals Q·Kᵀ / √hs", passed, detail


def mask_allows(mask: torch.Tensor) -> tuple[torch.Tensor, str]:
    """Where a mask lets a query see a key (True), and how it says so: additive (0 allowed, −inf or ≤ −1e9 blocked) or
    boolean (True allowed, or True blocked: the diagonal, allowed but at padded positions, tells which)."""
    if mask.dtype == torch.bool or (set(mask.unique().tolist()) <= {0.0, 1.0} and bool(mask.bool().any())):
        m = mask.bool()
        if float(m.diagonal(dim1=-2, dim2=-1).float().mean()) > 0.5:
            return m, "boolean, True = allowed"
        return ~m, "boolean, True = blocked"
    return mask > -1e9, "additive, 0 = allowed, −inf = blocked"


@dataclass(frozen=True, kw_only=True)
class SoftmaxRows(Check):
    """Tensors only: rows of ``out`` (over the last axis, the keys) are the softmax of ``scores`` (plus the ``mask``, when
    given: additive, or boolean where False blocks), sum to 1, never negative; ``causal``: no weight on a later position.
    Weights whose columns sum to 1 instead are said to come from a softmax over the wrong axis."""

    out: Ref = THIS
    scores: Ref
    mask: Ref | None = None
    causal: bool = False

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        weights = s.t(self.out)
        row_sums = weights.sum(-1)
        worst_sum = float((row_sums - 1).abs().max())
        negative = int((weights < 0).sum())
        passed = worst_sum <= TOLERANCE and negative == 0
        detail = (f"{row_sums.numel():,} rows over the keys (last axis): a row sum is at most {worst_sum:.1e} away from 1"
                  f"{'' if worst_sum <= TOLERANCE else ' (NOT probability distributions)'}; {negative} negative weights")
        if not passed and weights.dim() >= 2 and float((weights.sum(-2) - 1).abs().max()) <= TOLERANCE:
            detail += "; it is the columns (the query axis) that sum to 1: the softmax ran over the wrong axis"
        logits = s.t(self.scores)
        if self.mask is not None:
            allowed, _ = mask_allows(s.cpu(self.mask))
            nothing = ~allowed.any(-1, keepdim=True)  # a padded query that may see no key: every score masked alike, uniform
            logits = logits.masked_fill(~allowed & ~nothing, float("-inf")).masked_fill(nothing, 0.0)
        same, more = close(weights, torch.softmax(logits, dim=-1), "recomputed softmax over the keys" + (" of the masked scores" if self.mask else ""))
        unseen = (weights == 0).all(-2, keepdim=True)  # keys no query attends to at all: a padding mask the step does not show
        if not same and bool(unseen.any()) and not bool(unseen.all(-1).any()):
            same, more = close(weights, torch.softmax(logits.masked_fill(unseen, float("-inf")), dim=-1),
                               f"recomputed softmax over the keys any query attends to ({int(unseen.sum())} key positions "
                               "get no weight from any query: a padding mask recognised)")
        passed &= same
        detail += "; " + more
        if self.causal:
            above = torch.triu(torch.ones(weights.shape[-2], weights.shape[-1], dtype=torch.bool), diagonal=1)  # keys after the query
            future = float(weights[..., above].abs().max()) if above.any() else 0.0
            passed &= future == 0.0
            detail += f"; largest weight on a future position: {future:g}"
        return "rows are probability distributions over the keys" + (" (causal)" if self.causal else ""), passed, detail


@dataclass(frozen=True, kw_only=True)
class CausalMask(Check):
    """Tensors only: a causal mask allows exactly the keys on and before the query: additive (0 on and below the
    diagonal, −inf or ≤ −1e9 above) or boolean (True allowed, or True blocked)."""

    out: Ref = THIS

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        mask = s.cpu(self.out)
        allowed, kind = mask_allows(mask)
        above = torch.triu(torch.ones(mask.shape[-2], mask.shape[-1], dtype=torch.bool), diagonal=1)
        seen = int(allowed[..., above].sum())
        keys, queries = (~allowed).all(-2, keepdim=True), (~allowed).all(-1, keepdim=True)  # padded positions, whole
        padding = (keys | queries) & ~above  # keys no query may see, queries that see nothing: padding, not the causal rule
        hidden = int((~allowed & ~above & ~padding).sum())
        passed = seen == 0 and hidden == 0
        detail = f"{kind} mask; {int(above.sum())} future entries blocked, {int((~above).sum())} on and below the diagonal allowed: {passed}"
        if bool(padding.any()):
            count = lambda blocked: ", ".join(str(int(n)) for n in blocked.reshape(blocked.shape[0] if blocked.dim() > 2 else 1, -1).sum(-1))
            detail += (f"; besides, padding combined with the causal rule: {count(keys)} key positions blocked for every query, "
                       f"{count(queries)} query positions that see no key (per batch item)")
        if not kind.startswith("boolean"):
            exact = bool((mask[allowed.expand_as(mask)] == 0).all()) if allowed.shape == mask.shape else True
            detail += f"; the allowed entries are exactly 0: {exact}"
            passed &= exact
        if seen:
            detail += f"; {seen} future entries stay visible"
        if hidden:
            detail += f"; {hidden} entries on or below the diagonal are blocked"
        return "allows each position itself and the positions before it, never a later one", passed, detail


@dataclass(frozen=True, kw_only=True)
class ContextConcat(Check):
    """Tensors only: ``out`` (B, T, C) is probs·V per head with the heads concatenated; ``v`` per head (B, h, S, hs) or
    whole (B, S, C), then split into the probabilities' heads."""

    out: Ref = THIS
    probs: Ref
    v: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        probs = s.t(self.probs)
        ctx = probs @ _heads(s.t(self.v), probs.shape[1])  # (B, h, T, hs)
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



def whole_ids(ids: torch.Tensor) -> tuple[str, bool, str]:
    """What tensors alone say of token IDs (without the run's vocabulary): whole numbers, none negative."""
    fractional, negative = int((ids != ids.round()).sum()), int((ids < 0).sum())
    return "token IDs are whole numbers ≥ 0", fractional == negative == 0, (
        f"{ids.numel()} IDs, from {_number(ids.min())} to {_number(ids.max())}: {fractional} not whole, {negative} negative")


def _number(value: torch.Tensor) -> str:
    """A whole number as the integer it is (an ID), anything else to 4 decimals."""
    number = float(value)
    return str(int(number)) if number.is_integer() else fmt(number)


@dataclass(frozen=True, kw_only=True)
class RowEquals(Check):
    """Tensors only: ``out`` is row ``row`` (axis 1) of ``source``."""

    out: Ref = THIS
    source: Ref
    row: int
    claim: str

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        source = s.t(self.source)
        passed, detail = close(s.t(self.out), source[:, self.row], self.claim)
        if not passed and close(s.t(self.out), source.mean(1), "")[0]:  # mean pooling: a model without a class token
            return ("is the mean of the final sequence's rows (mean pooling, no class token)", True,
                    close(s.t(self.out), source.mean(1), "the mean over the positions")[1])
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
    """``out`` is GELU of the Linear ``module`` applied to ``x``; without the weights, every value lies in GELU's range."""

    WEIGHTS_OPTIONAL = True

    out: Ref = THIS
    x: Ref
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        try:
            expected = F.gelu(linear(s, self.module, s.t(self.x)))
        except NotCheckable:  # no weights: what GELU's output must satisfy whatever fc1 computed
            low = float(s.t(self.out).min())
            return "values lie in GELU's range (≥ −0.17)", low >= GELU_MINIMUM, (
                f"smallest value {low:.4f}; GELU never goes below −0.1700 (without the weights of {s.name(self.module)}, "
                "a necessary condition only)")
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
