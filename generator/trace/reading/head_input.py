"""A step checked on the input its own line's module call was given, where no snapshot shows the catalogue's tensor
for it (a classification head called on the pooled token, ``self.mlp_head(x[:, 0])``, with no line of the pooling
marked): the check holds for whatever the head was given, so the pick itself went unchecked (the last patch pooled
passed). The first module the line called was given that tensor; the claims of the snapshot that shows it (the pooled
token is row 0, the class token, of the final sequence) are checked on it, where what they read is captured: where the
first call was given the tensor that stood in, or a LayerNorm whose output it is (a head of a LayerNorm and a Linear).
A head that is more than that, a pre-logits MLP (``nn.Sequential(Linear, Tanh, Linear)``: the step's check read its last
Linear), was given the pooled token by its first Linear; that call is taken where the calls after it lead from its
output to the tensor that stood in, each given the one before's output through an elementwise activation, and only
for the pooled row's claims (an MLP line's first Linear was given no hidden activation).
A claim that fails with evidence (the wrong token pooled) fails the step, with it; one that passes or cannot tell
changes nothing. Correct code gives the head what the catalogue's tensor is, or what a correct architecture gives it in
its place (a parallel block's MLP LayerNorm reads the block input: its check's ``CORRECT_INPUTS``), so this never fires
there."""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import FAILED, PASSED, Check, CheckResult, close
from transformer_trace.checks.layers import fitted_activation
from transformer_trace.checks.pooled_row import RowEquals
from transformer_trace.sources import NotCheckable, Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.run_layout import CLASS_LAST, CLASS_PLACES
from transformer_trace.trace.reading.same_tensors import same_tensor
from transformer_trace.trace.reading.stand_ins import StandIn
from transformer_trace.trace.reading.weights import bind

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.capture_reading import CaptureReading
    from transformer_trace.trace.reading.pages import SnapshotReading

def _first_input(page: SnapshotReading, stood_in: torch.Tensor) -> tuple[str, torch.Tensor] | None:
    """The first module the page's line called and what it was given, where that is the head's own input: the
    tensor that stood in itself, or a LayerNorm's input whose output it is (a head ``LayerNorm, Linear``); None where
    the line's first call is anything else (``fc2(gelu(fc1(x)))``: fc1 was given no pooled token). A call that made a
    tensor the line read (``out = self.norm(x)`` on the statement before ``self.head(out[:, 0])``) ran before the line
    and is not one of its own."""
    read = [call.outputs[0] for call in page.calls if call.kind == ModuleKind.LOCAL and call.outputs
            and isinstance(call.outputs[0], torch.Tensor)]
    for call in page.calls:
        if call.kind == ModuleKind.LOCAL or (call.outputs and isinstance(call.outputs[0], torch.Tensor)
                                            and any(same_tensor(call.outputs[0], local) for local in read)):
            continue
        if call.inputs and isinstance(call.inputs[0], torch.Tensor) and call.inputs[0].is_floating_point():
            given, output = call.inputs[0], call.outputs[0] if call.outputs else None
            norm = call.kind == ModuleKind.LAYER_NORM and isinstance(output, torch.Tensor)
            if (same_tensor(given, stood_in)
                    or norm and isinstance(output, torch.Tensor) and same_tensor(output, stood_in)):
                return call.module, given
            return None
    return None


def _chained_first_input(page: SnapshotReading, stood_in: torch.Tensor) -> tuple[str, torch.Tensor] | None:
    """The line's first module call and what it was given, where the calls after it lead from its output to the
    tensor that stood in, each given the one before's output through a member of the activations' family
    (checks/layers.py ``ACTIVATIONS``: a head ``Linear, Tanh, Linear`` whose last Linear the step's check read); None
    where the chain breaks first."""
    calls = [call for call in page.calls if call.inputs and isinstance(call.inputs[0], torch.Tensor)
             and call.inputs[0].is_floating_point()]
    for previous, call in zip(calls, calls[1:]):
        output, given = previous.outputs[0] if previous.outputs else None, call.inputs[0]
        assert given is not None
        if not isinstance(output, torch.Tensor) or fitted_activation(output, given) is None:
            return None
        if same_tensor(given, stood_in):
            first = calls[0].inputs[0]
            assert first is not None
            return calls[0].module, first
    return None


def _pools(reading: SnapshotReading) -> bool:
    """Whether the snapshot is the pooled row (its claims: one row of the final sequence)."""
    return any(isinstance(check, RowEquals) for check in getattr(reading.snap, "checks", ()))


def _a_correct_input(page: SnapshotReading, given: torch.Tensor, source: TensorDict) -> bool:
    """Whether ``given`` is what a correct architecture gives the step in place of the catalogue's tensor, as one of
    the page's checks declares (``CORRECT_INPUTS``: a parallel block's MLP LayerNorm reads the block input, there being
    no first residual sum): then the claims of the snapshot it stands for do not apply to it."""
    for check in getattr(page.snap, "checks", ()):
        for field in getattr(check, "CORRECT_INPUTS", ()):
            ref = getattr(check, field, None)
            if isinstance(ref, Ref) and source.has(ref) and same_tensor(given, source.t(ref)):
                return True
    return False


def _a_gated_product(page: SnapshotReading, given: torch.Tensor) -> bool:
    """Whether ``given`` is the product of two tensors the page's line read (``self.W2(g * z)``, ``g`` an activation of
    one Linear, ``z`` another's): a gated MLP's hidden layer made on the line itself, of either sign, where the step it
    stands for claims an activation's output (GELU's range): those claims are not its form."""
    read = [call.outputs[0] for call in page.calls if call.kind == ModuleKind.LOCAL and len(call.outputs) == 1
            and isinstance(call.outputs[0], torch.Tensor) and call.outputs[0].shape == given.shape]
    return any(close(given.double(), a.double() * b.double(), "")[0] for a, b in itertools.combinations(read, 2))


def _owner(readings: list[SnapshotReading], name: str, source: TensorDict) -> SnapshotReading | None:
    """The uncaptured snapshot whose tensor is the record ``name``."""
    for reading in readings:
        if not reading.captured and any(isinstance(ref, Ref) and source.name(ref) == name
                                        for ref in reading.snap.tensors):
            return reading
    return None


def _claim_checked(claim: Check, page: SnapshotReading, source: TensorDict, name: str, given: torch.Tensor,
                   stood_in: torch.Tensor, pooled: bool) -> CheckResult | None:
    """``claim`` on what the head was given (as the record ``name``): on the tensors it reads where they are captured,
    else, for the pooled row's claims (``pooled``) only, bound to what the page's own line read (the sequence ``x`` of
    ``self.head(x[:, 0])``, copied as the line ran: the pooled row's ``bound_by``, as on the pooled row's own line, with
    the LayerNorm the line applied to the row: then what it is compared with is that norm's output, the tensor that
    stood in); None where neither gives it what it reads. (Bound to another step's line, a claim would read that
    line's own module calls as its operands: a Q projection's output taken for the residual sum's sublayer output.)"""
    if all(source.has(ref) for ref in claim.inputs()):
        return claim.run(source)
    if not pooled:
        return None
    normed = next((call for call in page.calls if call.kind == ModuleKind.LAYER_NORM and call.outputs
                   and isinstance(call.outputs[0], torch.Tensor) and same_tensor(call.outputs[0], stood_in)), None)
    out = stood_in if normed is not None else given
    with_out = source.with_tensors({**source.tensors, name: out.detach().double()})
    bound = bind(claim, page.calls, with_out, out)
    return bound.check.run(bound.source) if bound is not None else None


def _in_scripts_rows(said: str, class_last: str) -> str:
    """The wrong token's message in the script's own rows, where the run keeps the class token last (its steps are
    read with it moved first, so "row 1" there is the script's row 0, a patch): "the class token is the last row
    (...) but row 0 was pooled"."""
    pooled = _ROW_POOLED.search(said)
    if not class_last or pooled is None:
        return said
    return (f"the class token is the last row ({class_last}) but row {int(pooled.group(1)) - 1} was pooled; {said} "
            "(rows counted with the class token moved first, as the whole run is read)")


def class_kept_last(reading: CaptureReading) -> str:
    """Why the run keeps the class token last (the overview's "Class token" row: run_layout.py), where it does; else
    ""."""
    return next((rests_on for what, says, rests_on in reading.layout_read
                 if what == "Class token" and says == CLASS_PLACES[CLASS_LAST]), "")


_ROW_POOLED = re.compile(r"the wrong token was pooled: it is row (\d+) of ")


def head_input_checked(readings: list[SnapshotReading], results: dict[int, list[CheckResult]],
                       stand_ins: list[StandIn], source: TensorDict | None,
                       in_users_terms: Callable[[CheckResult], CheckResult], class_last: str = "") -> None:
    """Fail (in ``results``) a passed step whose line's first module call was given a tensor the claims of the
    snapshot it stands for name wrong (the module docstring); ``in_users_terms`` names its tensors as the script
    does; ``class_last``: why the run keeps the class token last, where it does (the rows are then named as the
    script has them)."""
    if source is None:
        return
    by_number = {reading.snap.number: reading for reading in readings}
    for number, index, name, stood_in in stand_ins:
        page, owner = by_number[number], _owner(readings, name, source)
        first = _first_input(page, stood_in)
        if first is None and owner is not None and _pools(owner):
            first = _chained_first_input(page, stood_in)
        result = results[number][index]
        if owner is None or first is None or result.status != PASSED:
            continue
        module, given = first
        if _a_correct_input(page, given, source) or _a_gated_product(page, given):
            continue
        with_given = source.with_tensors({**source.tensors, name: given.detach().double()})
        for check in getattr(owner.snap, "checks", ()):
            if "out" not in check.parameters():
                continue
            try:
                found = _claim_checked(dataclasses.replace(check, out=Ref(name)), page, with_given, name, given,
                                       stood_in, _pools(owner))
            except (NotCheckable, RuntimeError, ValueError, IndexError):
                continue
            if found is None:
                continue
            found = in_users_terms(found)
            if found.status == FAILED and found.evidence is not None:
                said = found.evidence.message.replace(f'your {name} ', 'it ')
                message = (f"what your line's {module} was given is not {owner.label}, the step it stands for "
                           f"({found.name}): {_in_scripts_rows(said, class_last)}")
                results[number][index] = CheckResult(
                    name=result.name, passed=False, status=FAILED, detail=f"{message}; {result.detail}",
                    evidence=dataclasses.replace(found.evidence, message=message))
                break
