"""What every check shares: ``CheckResult`` (passed, failed, unrecognised, not checkable; ``needs_evidence``), the
typed ``Check`` base whose dataclass fields say what it reads, and ``close``, the float64 comparison every check's
evidence comes from."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from transformer_trace.checks.evidence import BugForm, Evidence, Property, find_evidence
from transformer_trace.sources import InputRef, MissingTensor, ModuleRef, NotCheckable, ParamRef, Ref, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind

if typing.TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.checks.attention import HeadsRejoin
    from transformer_trace.checks.pooled_row import RowEquals
    from transformer_trace.checks.values import SumOf


from transformer_trace.checks.precision import (  # noqa: E402,F401 - the checks' names for it
    LOW_PRECISION, TOLERANCE, judged_as_evidence, judged_at, tolerance)


GELU_MINIMUM = -0.1701  # GELU's minimum, −0.16997 (−0.17004 with the tanh approximation), at x ≈ −0.75


THIS = Ref("")  # in a snapshot's check: the tensor the snapshot centres on (bound by the Snapshot)

PASSED, FAILED, NOT_CHECKABLE = "passed", "failed", "not checkable"
# a failure without evidence (checks/evidence.py): the step fits no form the check knows and breaks no property it
# tests; not a bug, not a pass
UNRECOGNISED = "unrecognised"


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: its claim, whether it held, and the evidence in words.

    ``status`` is "passed", "failed", "unrecognised" or "not checkable"; a check that could not run names what
    it lacked in ``missing`` (record names, modules, parameters or inputs) and is not ``passed``. A failure carries its
    ``evidence`` (checks/evidence.py: the property broken or the bug form that fitted), or, where none was found, what
    the bug forms tried found (``tried``): ``needs_evidence`` makes it unrecognised.
    """

    name: str
    passed: bool
    detail: str
    status: str = ""
    missing: tuple[str, ...] = ()
    parts: tuple[CheckResult, ...] = ()  # the results it combines (``combined``), when several
    # ``missing``, typed: what stopped it
    lacks: tuple[NotCheckable, ...] = dataclasses.field(default=(), compare=False, repr=False)
    evidence: Evidence | None = dataclasses.field(default=None, compare=False)
    tried: tuple[str, ...] = dataclasses.field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.status:
            object.__setattr__(self, "status", PASSED if self.passed else FAILED)
        if (self.status not in (PASSED, FAILED, UNRECOGNISED, NOT_CHECKABLE)
                or (self.status == PASSED) != bool(self.passed)):
            raise ValueError(f"inconsistent check result: status {self.status!r}, passed {self.passed!r}")

    @property
    def checkable(self) -> bool:
        return self.status != NOT_CHECKABLE

    @classmethod
    def combined(cls, results: list[CheckResult], *, judge_checkable: bool = False) -> CheckResult:
        """One result for several checks of a snapshot, in ``parts``: failed when one failed; else unrecognised when one
        was; passed when all passed; else not checkable. Its name is the claims that decided it (the failed ones, the
        passed ones; all when not checkable). ``judge_checkable``: judged by the checks that could run, passed when one
        did and none failed (a trace, whose source never has the weights); the others stay in ``parts`` and
        ``missing``."""
        if len(results) == 1:
            return results[0]
        ran = [r for r in results if r.checkable]
        if any(r.status == FAILED for r in results):
            status = FAILED
        elif any(r.status == UNRECOGNISED for r in results):
            status = UNRECOGNISED
        elif ran and (judge_checkable or len(ran) == len(results)):
            status = PASSED
        else:
            status = NOT_CHECKABLE
        # what the verdict names
        deciding = results if status == NOT_CHECKABLE else [r for r in results if r.status == status]
        return cls(name="; ".join(dict.fromkeys(r.name for r in deciding)), passed=status == PASSED,
                   detail=" — ".join(f"{r.name}: {r.detail}" for r in results), status=status,
                   missing=tuple(dict.fromkeys(m for r in results for m in r.missing)), parts=tuple(results),
                   lacks=tuple(lack for r in results for lack in r.lacks),
                   evidence=next((r.evidence for r in results if r.status == FAILED and r.evidence), None))

    def json(self) -> dict[str, Any]:
        """As snapshots.json lists it: ``passed`` is true, false, or null when not judged (not checkable, or
        unrecognised: ``status`` tells them apart); a failure's ``evidence`` where it has one."""
        judged = self.checkable and self.status != UNRECOGNISED
        return {"name": self.name, "passed": self.passed if judged else None, "detail": self.detail,
                "status": self.status, **({"evidence": self.evidence.json()} if self.evidence else {})}


# What a check field is, read from its type: a tensor, several tensors, a module, a parameter, an input, or a plain
# value.
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


@dataclass(frozen=True, kw_only=True)  # no fields of its own: its subclasses' are what it reads
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

    def inputs_read(self, s: TensorSource) -> tuple[Ref, ...]:
        """The recorded tensors a run on ``s`` reads (what a page says it compared): ``inputs()``, unless a check
        reads some of them only where others are missing."""
        return self.inputs()

    def refs_of(self, kind: str) -> tuple[Any, ...]:
        """The values of the fields of one kind (module, parameter, input)."""
        return tuple(getattr(self, name) for name, k in self.parameters().items()
                     if k == kind and getattr(self, name) is not None)

    def bound(self, main: Ref) -> Any:
        """A copy with every ``THIS`` replaced by ``main``, the snapshot's own tensor."""
        changes = {name: main for name, kind in self.parameters().items()
                   if kind == TENSOR and getattr(self, name) is THIS}
        return dataclasses.replace(self, **changes) if changes else self


@dataclass(frozen=True)
class TraceUse:
    """What a trace can read for a check from the module calls a traced marked line made (generator/trace/reading/
    weights.py), declared once per check class (``Check.TRACE``), so generic ``Check`` carries one declaration of the
    trace's, not one flag per use: ``calls``, the fields a call can stand for (field -> (the call's kind, "module": the
    module rebuilt from its parameters, "weight": its weight, "input": its input)); ``also_calls``, the kinds of calls a
    check's own binding reads besides (a residual sum's unmarked sublayer output from the Linear or the user's module
    the line called last); ``reads_locals``, whether the line's local tensors are copied (the projection a head split
    read); ``model_image``, whether ``out`` is the model's input image (also checked to be what the patch embedding was
    called with); ``mask_step``, whether the step is an attention mask (a trace reads one of one flag per position as
    a padding mask: reading/padding_mask.py); ``activated``, whether the step is an activation of the Linear its line
    called (a trace takes that Linear where no call's output is the step: reading/activated_before.py). A trace copies
    only the kinds of calls its checks read (``kinds``)."""

    calls: Mapping[str, tuple[ModuleKind, str]] = dataclasses.field(default_factory=dict)
    also_calls: frozenset[ModuleKind] = frozenset()
    reads_locals: bool = False
    model_image: bool = False
    mask_step: bool = False
    activated: bool = False

    @property
    def kinds(self) -> frozenset[ModuleKind]:
        return frozenset(kind for kind, _ in self.calls.values()) | self.also_calls


BoundT = typing.TypeVar("BoundT")  # what a binder binds a check to (generator/trace/reading/weights.py ``Bound``)
_BoundCo = typing.TypeVar("_BoundCo", covariant=True)


class CallBinder(typing.Protocol[_BoundCo]):
    """How a traced line's module calls bind a check's fields (generator/trace/reading/weights.py ``LineCalls``), one
    method per form of binding; a check picks its form (``Check.bound_by``): the double dispatch that keeps the trace's
    binding out of the checks and the checks' types out of the trace's binding."""

    def declared(self, check: Check) -> _BoundCo | None: ...  # the fields ``TRACE.calls`` declares
    def projections(self, check: HeadsRejoin) -> _BoundCo | None: ...  # a head split's whole projections
    def operand(self, check: SumOf) -> _BoundCo | None: ...  # a residual sum's unmarked sublayer output
    def row(self, check: RowEquals) -> _BoundCo | None: ...  # the sequence a row was taken from
    def positions(self, check: Check) -> _BoundCo | None: ...  # a positions step's lookup of a learned table


@dataclass(frozen=True, kw_only=True)
class Check(Typed):
    """Base of every check. Subclasses are frozen, keyword-only dataclasses that implement ``verify``; a check that
    reads weights says so by its ModuleRef/ParamRef fields, and is not checkable on a source without a model, unless
    its claim has a form that tensors alone decide (LayerNorm with a fitted gain and bias, GELU's range), which it then
    checks and names instead."""

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        """(the claim, whether it holds, the evidence in words), recomputed in float64 from ``s``."""
        raise NotImplementedError

    # The claim in plain words, for a result whose check could not run (its step not captured, its weights missing):
    # what a student reads beside "not checkable" ("is its input plus a learned table (the positions)")
    CLAIM: typing.ClassVar[str] = ""
    # True where the claim has a form that tensors alone decide (its verify catches the weights' NotCheckable)
    WEIGHTS_OPTIONAL: typing.ClassVar[bool] = False
    # What a traced script's module calls can give it (``TraceUse``: one declaration; a model run reads none of it)
    TRACE: typing.ClassVar[TraceUse] = TraceUse()
    # The field whose tensor ``derive`` computes from the others (the step is determined by them), or None
    DERIVES: typing.ClassVar[str | None] = None
    # Groups of optional tensor fields that widen what passes, never required: where the source lacks a tensor of a
    # group, ``run`` resets the group to its defaults (the check without that alternative) rather than not checkable
    OPTIONAL: typing.ClassVar[tuple[tuple[str, ...], ...]] = ()
    # What makes a failure evidence (checks/evidence.py): the bug forms it names, the properties every correct form
    # has; ``SUBSTITUTES``: whether its claim is also tried with an input read from another captured tensor, an operand
    # left out (named ``LEFT_OUT``) or another part of a fused projection
    BUG_FORMS: typing.ClassVar[tuple[BugForm, ...]] = ()
    PROPERTIES: typing.ClassVar[tuple[Property, ...]] = ()
    SUBSTITUTES: typing.ClassVar[bool] = True
    LEFT_OUT: typing.ClassVar[str] = "an operand left out"

    def claim_in_words(self) -> str:
        """The claim as a student reads it where the check could not run: ``CLAIM``, else the check's name in words."""
        return self.CLAIM or self.key().replace("_", " ")

    def bound_by(self, calls: CallBinder[BoundT]) -> BoundT | None:
        """This check with what the module calls of its traced line give it (None: nothing), in the form of binding
        its claim reads: the fields it declares in ``TRACE.calls``, unless a subclass reads another."""
        return calls.declared(self)

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        """The tensor of the field ``DERIVES`` computed from the others as the claim says it is (a trace derives a step
        nobody marked from the ones that were: scores from q and k); None where the others do not determine it."""
        return None

    def derive_by_layout(self, s: TensorSource, dims: Mapping[str, int]) -> dict[Ref, tuple[torch.Tensor, Ref]]:
        """The tensors of fields this claim relates to another by a layout operation alone (the head split of a whole
        projection, given the head count a trace bound, ``dims``), for those ``s`` lacks and can be made: each with the
        ref it was made from; none here."""
        return {}

    def reading(self, name: str, ref: Ref) -> Check:
        """This check with its tensor field ``name`` reading ``ref`` (a module call's input) instead."""
        return dataclasses.replace(self, **{name: ref})

    def run(self, s: TensorSource) -> CheckResult:
        """Verify against ``s``: passed or failed, or not checkable when a tensor, the weights or an input is missing;
        a check missing tensors names the weights it would also need and ``s`` lacks, so all of what it needs is
        said."""
        plain = self._without_absent(s)
        if plain is not self:
            return plain.run(s)
        lacks: tuple[NotCheckable, ...] = tuple(MissingTensor(s.name(ref), "not in the source")
                                                for ref in self.inputs() if not s.has(ref))
        if lacks and (alone := self._broken_alone(s)) is not None:  # the step itself breaks a property of its own
            return CheckResult(name=self.key(), passed=False, detail=f"{alone.message} (tested on this step alone: "
                               f"{', '.join(lack.missing for lack in lacks)} not captured)", evidence=alone)
        if lacks:
            missing = tuple(lack.missing for lack in lacks)
            lacks += self._lacking_weights(s)
            return CheckResult(name=self.key(), passed=False, status=NOT_CHECKABLE,
                               missing=tuple(lack.missing for lack in lacks),
                               detail=f"not checkable: the source has no {', '.join(missing)}", lacks=lacks)
        try:
            name, passed, detail = self.verify(s)
        except NotCheckable as exc:
            return CheckResult(name=self.key(), passed=False, status=NOT_CHECKABLE, missing=(exc.missing,),
                               detail=f"not checkable: {exc}", lacks=(exc,))
        if passed:
            return CheckResult(name=name, passed=True, detail=detail)
        evidence, tried = find_evidence(self, s)
        if evidence is not None:  # the diagnosis first: what is wrong, then the forms compared
            detail = f"{evidence.message}; {detail}"
        return CheckResult(name=name, passed=False, detail=detail, evidence=evidence, tried=tried)

    def _broken_alone(self, s: TensorSource) -> Evidence | None:
        """The first property tested on the step alone (``Property.alone``) the step breaks, where ``s`` holds it."""
        for prop in type(self).PROPERTIES:
            if prop.alone and (evidence := prop.broken(self, s)) is not None:
                return evidence
        return None

    def _without_absent(self, s: TensorSource) -> Check:
        """This check with each ``OPTIONAL`` group that reads a tensor ``s`` lacks reset to its defaults."""
        defaults = {field.name: field.default for field in dataclasses.fields(self)}
        reset = {}
        for group in self.OPTIONAL:
            values = [getattr(self, name) for name in group]
            refs = [ref for value in values for ref in (value if isinstance(value, tuple) else (value,))
                    if isinstance(ref, Ref)]
            if refs and not all(s.has(ref) for ref in refs):
                reset.update({name: defaults[name] for name in group})
        return dataclasses.replace(self, **reset) if reset else self

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


def needs_evidence(result: CheckResult) -> CheckResult:
    """A failed result without evidence becomes unrecognised (its detail: the forms tried and how far the step is from
    each), the one place of that rule; a combined one is judged again from its parts. Passed, not checkable and
    evidenced results stay."""
    if result.parts:
        parts = [needs_evidence(part) for part in result.parts]
        if all(a.status == b.status for a, b in zip(parts, result.parts)):
            return result
        return CheckResult.combined(parts, judge_checkable=True)
    if result.status != FAILED or result.evidence is not None:
        return result
    tried = "; ".join(result.tried)
    return dataclasses.replace(
        result, status=UNRECOGNISED,
        detail=(f"unrecognised: your step matches none of the forms this check knows, and breaks no property it tests "
                f"— {result.detail}" + (f"; bug forms tried: {tried}" if tried else "")))


MASK_FILL = 1e4  # a score this large (negative) is a masking value: exp(−1e4) is 0 in every float type


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
    # a masking value (−1e9, −finfo.max) matched exactly sets no scale: it would let every other entry pass
    filled = (magnitude >= MASK_FILL) & (diff == 0)
    scale = max(1.0, float(magnitude.masked_fill(filled, 0.0).max()))
    passed = math.isfinite(worst) and worst <= tolerance() * scale
    return passed, (f"{what}: largest difference {worst:.1e} over {actual.numel():,} values "
                    f"(tolerance {tolerance() * scale:.0e}{'' if tolerance() == TOLERANCE else ', half precision'})")


def linear(s: TensorSource, module: ModuleRef, x: torch.Tensor) -> torch.Tensor:
    """The module's x·Wᵀ + b; an input whose last axes together hold W's inputs ((B, T, h, hs) for a tensordot over
    the heads, trace/reading/projections.py) has them flattened first; one whose last axis holds several of W's inputs
    (a Linear(hs, hs) shared by every head, run on the input split into heads) is run on each slice, the outputs
    joined again."""
    weight, bias = weight_and_bias(s.module(module))
    if x.shape[-1] != weight.shape[1]:
        for axes in range(2, x.dim()):
            if math.prod(x.shape[-axes:]) == weight.shape[1]:
                x = x.reshape(*x.shape[:-axes], -1)
                break
        else:
            if x.shape[-1] % weight.shape[1] == 0:  # one Linear(hs, ·) shared by the heads: on each head's slice
                heads = F.linear(x.reshape(*x.shape[:-1], -1, weight.shape[1]), weight, bias)
                return heads.reshape(*x.shape[:-1], -1)
    return F.linear(x, weight, bias)


def softmax_factor(weights: torch.Tensor, logits: torch.Tensor) -> tuple[float, torch.Tensor] | None:
    """The constant c with ``weights`` ≈ softmax(c · ``logits``) over the last axis, fitted from the log-weights row by
    row over the entries that got weight, and where those are; None where nothing varies."""
    if weights.shape != logits.shape:
        return None
    used = torch.isfinite(logits) & (weights > 0)
    # not a finite mask value (−1e9, −1e20), nor a uniform row (every key masked: uniform whatever c)
    uniform = (weights - weights.mean(-1, keepdim=True)).abs().amax(-1, keepdim=True) <= 1e-7
    fit = used & (logits > -1e8) & ~uniform
    count = fit.sum(-1, keepdim=True).clamp_min(1)
    log_w = torch.where(fit, weights.clamp_min(1e-300).log(), 0.0)
    x = torch.where(fit, logits, 0.0)
    x_c = torch.where(fit, x - x.sum(-1, keepdim=True) / count, 0.0)
    y_c = torch.where(fit, log_w - log_w.sum(-1, keepdim=True) / count, 0.0)
    if float((x_c * x_c).sum()) == 0.0:
        return None
    return float((x_c * y_c).sum() / (x_c * x_c).sum()), used


def weight_and_bias(layer: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A layer's weight and bias (None where it has none) in float64 on the CPU: a module of the model's, or a traced
    script's own; NotCheckable where they are not tensors."""
    weight, bias = getattr(layer, "weight", None), getattr(layer, "bias", None)
    if not isinstance(weight, torch.Tensor) or not (bias is None or isinstance(bias, torch.Tensor)):
        raise NotCheckable(f"the weights of {type(layer).__name__}", "its weight or bias is not a tensor")
    return weight.detach().double().cpu(), None if bias is None else bias.detach().double().cpu()


def settings(layer: torch.nn.Module, *names: str) -> tuple[Any, ...]:
    """A layer's settings, in the order named (a Conv2d's stride and padding, a LayerNorm's eps): plain attributes,
    which the type of a Module's attribute (a tensor or a submodule) does not describe."""
    return tuple(getattr(layer, name) for name in names)


def added(tensors: Iterable[torch.Tensor]) -> torch.Tensor:
    """The tensors' sum (``sum`` starts from the int 0: no tensor where there are none)."""
    total: torch.Tensor | None = None
    for tensor in tensors:
        total = tensor if total is None else total + tensor
    if total is None:
        raise NotCheckable("the operands of a sum", "none are given")
    return total
