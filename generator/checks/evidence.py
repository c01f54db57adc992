"""What a red verdict rests on (issue 40): a check's failure is evidence only where a form-independent ``Property`` of
the step is broken (a probability row that does not sum to 1, a query that attends to a later key, NaN where the
inputs have none) or a named ``BugForm`` fits the numbers where no correct form the check knows did (1/√d missing, the
softmax over the wrong axis, a residual dropped ...). Checks declare both (``Check.PROPERTIES``, ``Check.BUG_FORMS``);
``Check.run`` looks for the evidence of a failure once (``find_evidence``), and ``needs_evidence`` (checks/base.py) is
the one place where a failure without it becomes **unrecognised**: a form the tool does not know is never called a
bug."""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.precision import judged_as_evidence
from transformer_trace.sources import NotCheckable, Ref, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind

PROPERTY, BUG_FORM = "property", "bug form"


@dataclass(frozen=True)
class Evidence:
    """Why a failure is one: the property broken or the bug form that fitted, and the diagnosis with its numbers (what
    a student reads first)."""

    kind: str  # PROPERTY or BUG_FORM
    name: str
    message: str

    def json(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "message": self.message}


@dataclass(frozen=True)
class Fit:
    """A bug form tried on a step: whether it fits (within the checks' tolerance) and the numbers, in words."""

    fits: bool
    message: str


@dataclass(frozen=True)
class Property:
    """A property every correct form of the step has. ``test(check, source)`` returns the diagnosis with its numbers
    where the step breaks it, None where it holds (or cannot be tested)."""

    name: str
    tested: str  # how it is tested, in words
    test: Callable[[Any, TensorSource], str | None]
    # tested on the step alone: where the check's other inputs are not captured, a broken one is still evidence
    alone: bool = False

    def broken(self, check: Any, s: TensorSource) -> Evidence | None:
        message = _guarded(self.test, check, s)
        return Evidence(PROPERTY, self.name, message) if message else None


@dataclass(frozen=True)
class BugForm:
    """A named way of getting the step wrong. ``test(check, source)`` computes the step as the bug would and returns
    a ``Fit`` (None where the check's tensors do not allow the test)."""

    name: str
    tested: str  # how it is tested, in words
    test: Callable[[Any, TensorSource], Fit | None]

    def tried(self, check: Any, s: TensorSource) -> Fit | None:
        return _guarded(self.test, check, s)


def _guarded(test: Callable[[Any, TensorSource], Any], check: Any, s: TensorSource) -> Any:
    """A test of evidence that cannot run on these tensors (a shape it does not read, a tensor missing) finds none."""
    try:
        return test(check, s)
    except (NotCheckable, RuntimeError, ValueError, IndexError, KeyError, TypeError, ZeroDivisionError):
        return None


def _nan_where_inputs_have_none(check: Any, s: TensorSource) -> str | None:
    out = getattr(check, "out", None)
    if not isinstance(out, Ref) or not s.has(out):
        return None
    got = s.t(out)
    if not got.is_floating_point() or not bool(torch.isnan(got).any()):
        return None
    inputs = [s.t(ref) for ref in check.inputs() if ref is not out and s.has(ref)]
    if any(t.is_floating_point() and not bool(torch.isfinite(t).all()) for t in inputs):
        return None  # −inf or NaN in an input (a mask): its NaN may be the form's, not a bug's
    return (f"your {s.name(out)} holds {int(torch.isnan(got).sum()):,} NaN values where the tensors it is computed "
            "from have none")


NO_NAN = Property("no NaN where the inputs have none", "NaN in the step's tensor, none (nor ±inf) in what it reads",
                  _nan_where_inputs_have_none)


def find_evidence(check: Any, s: TensorSource) -> tuple[Evidence | None, tuple[str, ...]]:
    """The evidence of a failed check on ``s`` (the first of its bug forms that fits, else the first property it
    breaks, NaN included), and what each bug form tried found where none fitted (how far the step is from each)."""
    tried = []
    for form in (*type(check).BUG_FORMS, *_substitutions(check)):
        with judged_as_evidence():
            fit = form.tried(check, s)
        if fit is not None and fit.fits:
            return Evidence(BUG_FORM, form.name, fit.message), ()
        if fit is not None:
            tried.append(f"{form.name}: {fit.message}")
    for prop in (*type(check).PROPERTIES, NO_NAN):
        evidence = prop.broken(check, s)
        if evidence is not None:
            return evidence, ()
    return None, tuple(tried)


# --- the step computed from another tensor: the check's own correct forms, one input replaced -----------------------


def _substitutions(check: Any) -> tuple[BugForm, ...]:
    """The bug forms every check with tensor inputs has: its claim holds with one input read from another captured
    tensor of its shape (K from another input, LayerNorm of the wrong tensor, the residual from another point), with one
    operand of a sum left out (a residual dropped), or with another part of a fused projection (K from the V slice)."""
    if not type(check).SUBSTITUTES:
        return ()
    return (BugForm(type(check).LEFT_OUT, "the check's claim with one operand of its sum left out", _operand_left_out),
            BugForm("another part of the projection", "the check's claim with another of q, k, v", _another_part),
            BugForm("computed from another tensor", "the check's claim with one input replaced by another captured "
                    "tensor of its shape", _another_input),
            BugForm("another tensor added", "the check's claim with another captured tensor (its leading part, "
                    "where longer) added to one input", _another_added))


def _holds(check: Any, s: TensorSource) -> bool:
    try:
        _, passed, _ = check.verify(s)
    except (NotCheckable, RuntimeError, ValueError, IndexError, KeyError, TypeError, ZeroDivisionError):
        return False
    return bool(passed)


def _candidates(check: Any, s: TensorSource, ref: Ref) -> list[str]:
    """The captured tensors that could stand where ``ref`` is read: its shape, floating point, not the step itself nor
    ``ref``'s own values. One equal to the step stands only where it was computed at an earlier layer than the step (a
    loop that feeds every block the first block's input): an equality with a later step holds trivially on correct
    code (the next block's input is this block's output)."""
    tensors = getattr(s, "tensors", {})
    out = getattr(check, "out", None)
    if not isinstance(out, Ref):  # a claim between its inputs (the mask's: masked = scores masked): the one derived
        out = getattr(check, getattr(check, "DERIVES", "") or "out", None)
    step_name = s.name(out) if isinstance(out, Ref) else ""
    own, step = s.t(ref), s.t(out) if isinstance(out, Ref) and s.has(out) else None
    found = []
    for name, tensor in tensors.items():
        if name in (s.name(ref), step_name) or tensor.shape != own.shape or not tensor.is_floating_point():
            continue
        value = tensor.detach().cpu().double()
        if torch.equal(value, own) or (step is not None and step.shape == value.shape and torch.allclose(value, step)
                                       and not at_an_earlier_layer(name, step_name)):
            continue
        found.append(name)
    return found


def _layer_of(name: str) -> str:
    """The layer a record name belongs to, in words ("layer 0 of blocks"), from its first index."""
    parts = name.split(".")
    index = next(i for i, part in enumerate(parts) if part.isdigit())
    return f"layer {parts[index]} of {'.'.join(parts[:index]) or 'the stack'}"


def at_an_earlier_layer(name: str, step: str) -> bool:
    """Whether record ``name`` belongs to an earlier layer of the same stack as record ``step`` (``blocks.0.input``
    before ``blocks.1.input``): the layers of a stack run in their index order, so it was computed before the step."""
    mine, theirs = name.split("."), step.split(".")
    for i, (a, b) in enumerate(zip(mine, theirs)):
        if a.isdigit() and b.isdigit():
            return int(a) < int(b)
        if a != b:
            return False
    return False


def _input_fields(check: Any) -> list[tuple[str, Any]]:
    kinds = check.parameters()
    return [(name, getattr(check, name)) for name, kind in kinds.items()
            if kind in ("tensor", "tensors") and name != "out" and getattr(check, name) is not None]


def _captured_inputs(check: Any, s: TensorSource) -> Iterator[tuple[Ref, Callable[[Ref], Any]]]:
    """Each captured input of the check (a field's ref, or one of a tuple field's), with a function that gives the
    check with another ref in its place."""
    for name, value in _input_fields(check):
        refs = value if isinstance(value, tuple) else (value,)
        for i, ref in enumerate(refs):
            if s.has(ref):
                def with_input(new: Ref, name: str = name, value: Any = value, i: int = i) -> Any:
                    return dataclasses.replace(
                        check, **{name: (*value[:i], new, *value[i + 1:]) if isinstance(value, tuple) else new})
                yield ref, with_input


def _another_input(check: Any, s: TensorSource) -> Fit | None:
    searched, step = 0, _step(check, s)
    ran_after = getattr(getattr(s, "run", None), "ran_after", None)
    for ref, with_input in _captured_inputs(check, s):
        if ran_after is not None and ran_after(s.name(ref), step):
            # what the catalogue feeds the step ran after it (a position encoding applied after the first block, as
            # Twins' PEG is): the step cannot be computed from it, so another tensor in its place is no evidence
            continue
        for other in _candidates(check, s, ref):
            if ran_after is not None and ran_after(other, step):
                continue  # computed after the step: it cannot be what the step was computed from
            if _unobserved_both(check, s, ref, other) or _another_hit(s.name(ref), other, step):
                continue
            searched += 1
            changed = with_input(Ref(other))
            if _holds(changed, s):
                claim, _, detail = changed.verify(s)
                layer = _layer_of(other) if at_an_earlier_layer(other, step) else ""
                earlier = f" at an earlier layer ({layer}): the tensor an earlier layer had, handed over again" \
                    if layer else ""
                return Fit(True, f"your {step} is computed from {other}{earlier} where {s.name(ref)} "
                                 f"belongs (with {other} in its place: {claim}; {detail})")
    return Fit(False, f"none of the {searched} captured tensors of the inputs' shapes fits in their place") \
        if searched else None


def _another_hit(name: str, other: str, step: str) -> bool:
    """Whether ``other`` is the same record as ``name`` at another layer, not one before the step's: a line that ran
    more times per layer than the catalogue's one (three attention calls in a layer) pairs its hits with the layers
    wrongly, so a fit with another of them is a pairing the reading missed, no evidence (an earlier layer's, handed
    over again, is a bug form of its own)."""
    digits = re.compile(r"\.\d+\.")
    same = digits.sub(".#.", other) == digits.sub(".#.", name)
    return other != name and same and not at_an_earlier_layer(other, step)


def _unobserved_both(check: Any, s: TensorSource, ref: Ref, other: str) -> bool:
    """Whether ``other`` is the input of a call the step's own line made (``name@Module.input``, no step of the
    script's) and either ``ref`` is a step no marker captured (derived from others by the catalogue's relation) or the
    claim is a normalisation of its input (the norm's own input always gives the norm's output): the line's input in
    ``ref``'s place then says only that the script computes it in a form the derivation or the claim does not know
    (DeepNorm's LayerNorm(α·x + y) for LayerNorm(x + y)), no evidence of another tensor."""
    if "@" not in other:
        return False
    ran = getattr(getattr(s, "run", None), "ran", None)
    norm = any(kind is ModuleKind.LAYER_NORM for kind, _ in type(check).TRACE.calls.values())
    return norm or (isinstance(ran, Mapping) and s.name(ref) not in ran)


def _leading_part(tensor: torch.Tensor, shape: torch.Size) -> torch.Tensor | None:
    """``tensor`` cut to ``shape`` from the start of each axis (a longer sequence's first positions), or None."""
    if tensor.dim() != len(shape) or any(have < want for have, want in zip(tensor.shape, shape)):
        return None
    return tensor[tuple(slice(0, want) for want in shape)]


def _another_added(check: Any, s: TensorSource) -> Fit | None:
    tensors = getattr(s, "tensors", None)
    if not isinstance(tensors, dict) or not dataclasses.is_dataclass(s):
        return None
    out = getattr(check, "out", None)
    step = s.name(out) if isinstance(out, Ref) else ""
    searched = 0
    ran_after = getattr(getattr(s, "run", None), "ran_after", None)
    for ref, with_input in _captured_inputs(check, s):
        own = s.t(ref)
        for other, tensor in tensors.items():
            if other in (s.name(ref), step) or not tensor.is_floating_point() or (
                    ran_after is not None and ran_after(other, _step(check, s))):  # computed after the step
                continue
            part = _leading_part(tensor.detach().cpu().double(), own.shape)
            if part is None:
                continue
            searched += 1
            changed = with_input(Ref("@added"))
            source = dataclasses.replace(s, tensors={**tensors, "@added": own + part})
            if _holds(changed, source):
                claim, _, detail = changed.verify(source)
                cut = "" if part.shape == tensor.shape else f" (its first {tuple(part.shape)})"
                return Fit(True, f"your {_step(check, s)} is computed from {s.name(ref)} + {other}{cut} where "
                                 f"{s.name(ref)} alone belongs ({claim}; {detail})")
    return Fit(False, f"none of the {searched} captured tensors added to an input fits") if searched else None


def _fewer(operands: tuple[Ref, ...]) -> list[tuple[Ref, ...]]:
    """The operands with some left out (at least one kept), the fewest left out first, in order."""
    return [kept for size in range(len(operands) - 1, 0, -1) for kept in itertools.combinations(operands, size)]


def _operand_left_out(check: Any, s: TensorSource) -> Fit | None:
    for name, value in _input_fields(check):
        if not isinstance(value, tuple) or len(value) < 2 or not all(s.has(ref) for ref in value):
            continue
        for kept in _fewer(value):  # one operand left out first, then two ...
            changed = dataclasses.replace(check, **{name: kept})
            if _holds(changed, s):
                claim, _, detail = changed.verify(s)
                left = " and ".join(s.name(ref) for ref in value if ref not in kept)
                return Fit(True, f"your {_step(check, s)} leaves out {left} (without it: {claim}; {detail})")
        return Fit(False, "no operand left out fits")
    return None


def _another_part(check: Any, s: TensorSource) -> Fit | None:
    part = getattr(check, "part", None)
    if not isinstance(part, int) or "part" not in check.parameters():
        return None
    for other in (p for p in range(3) if p != part):
        changed = dataclasses.replace(check, part=other)
        if _holds(changed, s):
            _, _, detail = changed.verify(s)
            return Fit(True, f"your {_step(check, s)} is the {'QKV'[other]} part of the projection, where the "
                             f"{'QKV'[part]} part belongs ({detail})")
    return Fit(False, "no other part of the projection fits")


def _step(check: Any, s: TensorSource) -> str:
    out = getattr(check, "out", None)
    return s.name(out) if isinstance(out, Ref) else "step"
