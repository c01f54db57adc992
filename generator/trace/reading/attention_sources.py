"""A cross-attention's keys and values computed from another tensor than the encoder's output (issue 40: DETR's
decoder handed the encoder's input as ``memory``; T5's ``self.to_k(x), self.to_v(x)`` where ``kv_input`` belongs). No
step's own check sees it: the K projection is W_k applied to whatever it was given, and the attention computes
correctly from its arguments. What the marked lines' module calls were given shows it:

- the catalogue's declared roles (``Role``, carried by its references) say which steps are the cross-attention's keys
  and values (the call whose output is the step's tensor was given its input), and which steps read a
  cross-attention's tensor (the one ``nn.MultiheadAttention`` such a line, or an unmarked statement it was traced back
  to, called: its ``key`` and ``value`` arguments);
- the encoder's output is the last hit of the encoder layer's output step (the step declared the encoder's layer
  output), or a LayerNorm of it (a final norm no line marks: T5's), in the run's layout;
- the tensor given is the encoder's output → correct; it equals the query's input (the cross-attention's ``query``
  argument, or the Q projection's input) or a captured step's tensor at some hit, and neither the encoder's output
  nor a LayerNorm of it → the bug form "K or V from another input", at the step whose line showed it. Anything else
  (the key ``memory + pos``: positions added to the encoder's output; the encoder's output not captured) leaves the
  verdicts as they were: a form we do not know is no bug.

The same calls show positions added twice where no positions step is captured (DETR adds them inside every layer):
what an attention module adds to its query or key over its value is its positions, and one that adds exactly twice
what another attention of the run adds (``q = k = src + 2 pos`` beside ``key = memory + pos``) fails with the bug
form "positions added twice" (``positions_added_twice``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import FAILED, CheckResult, UnfittableWeights, close
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.checks.normalisation import fitted_layer_norm
from transformer_trace.models.recording import Role
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.misfed import CLAIM, K_OR_V_FROM_ANOTHER_INPUT
from transformer_trace.trace.reading.same_tensors import same_floats

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.capture import ModuleCall
    from transformer_trace.trace.reading.pages import SnapshotReading

DECODER_STAGE = "decoder"
ENCODER_OUTPUT = frozenset({Role.ENCODER, Role.LAYER_OUTPUT})  # the encoder layer's output step's declared roles
ARGUMENTS = ("query", "key", "value")  # nn.MultiheadAttention's, in order (the child keeps them positionally)


def _named(page: SnapshotReading) -> str:
    return f"{page.main.variable or page.main.name} ({page.label})"


def _encoder_output(readings: Sequence[SnapshotReading]) -> tuple[SnapshotReading, torch.Tensor] | None:
    """The encoder layer's output step and its value at its last hit (the last layer's: the encoder's output, where
    no final norm follows), in the run's layout; None where it was not captured."""
    page = next((p for p in readings if p.captured and ENCODER_OUTPUT <= p.snap.main.roles), None)
    if page is None or not page.hit_values:
        return None
    values = [v for v in page.hit_values[0] if isinstance(v, torch.Tensor)]
    last = page.run.as_called(values[-1]) if values else None
    return (page, last) if isinstance(last, torch.Tensor) else None


def _is_encoder_output(given: torch.Tensor, encoder_output: torch.Tensor) -> bool:
    """``given`` is the encoder's output, or a LayerNorm of it (gain and bias fitted per feature); where too few
    positions tell, it counts as one (nothing is claimed)."""
    if same_floats(given, encoder_output):
        return True
    try:
        return fitted_layer_norm(given.double(), encoder_output.double(), "the encoder's output")[1]
    except UnfittableWeights:
        return True


def _output_of(page: SnapshotReading, calls: Sequence[ModuleCall]) -> ModuleCall | None:
    """The Linear call whose output is the page's step."""
    step = page.main_as_called
    return next((c for c in calls if c.kind == ModuleKind.LINEAR and c.outputs
                 and same_floats(page.run.as_called(c.outputs[0]), step)), None)


def _projection_pages(readings: Sequence[SnapshotReading], projection: Role) -> list[SnapshotReading]:
    """The captured steps the catalogue declares to be a cross-attention's ``projection`` (its keys: ``Role.KEYS``)."""
    return [p for p in readings if p.captured and {Role.CROSS_ATTENTION, projection} <= p.snap.main.roles]


def _given(readings: Sequence[SnapshotReading],
           ) -> Iterator[tuple[SnapshotReading, str, torch.Tensor, torch.Tensor | None]]:
    """Each tensor a cross-attention's keys or values were computed from, in the catalogue's order: (the page whose
    line showed it, what it is, the tensor given, the query's input where known)."""
    queries = [(p, call) for p in _projection_pages(readings, Role.QUERIES)
               if (call := _output_of(p, p.calls)) is not None]
    query_input = queries[0][0].run.as_called(queries[0][1].inputs[0]) if queries and queries[0][1].inputs else None
    projections = {role: _projection_pages(readings, role) for role in (Role.KEYS, Role.VALUES)}
    for page in sorted(readings, key=lambda p: p.snap.number):
        if not page.captured:
            continue
        for role, what in ((Role.KEYS, "the keys' projection"), (Role.VALUES, "the values' projection")):
            call = _output_of(page, page.calls) if page in projections[role] else None
            given = page.run.as_called(call.inputs[0]) if call is not None and call.inputs else None
            if call is not None and isinstance(given, torch.Tensor):
                yield page, f"{what} ({call.module}) was given {{}}", given, query_input
        if not any(Role.CROSS_ATTENTION in ref.roles for check in page.snap.checks for ref in check.inputs()):
            continue
        attentions = [c for c in page.calls if c.kind == ModuleKind.MULTIHEAD_ATTENTION
                      and len(c.inputs) >= len(ARGUMENTS)]
        # (a line that ran a whole decoder layer called its self-attention too, given the decoder stream as its key
        # and value as it should be: which call is the cross-attention is then not known, and none is read)
        for call in attentions if len(attentions) == 1 else ():
            query = page.run.as_called(call.inputs[0])
            for name, argument in zip(ARGUMENTS[1:], call.inputs[1:]):
                given = page.run.as_called(argument)
                if isinstance(given, torch.Tensor):
                    yield page, f"the {call.module} was given {{}} as its {name}", given, query


def _captured_equal(readings: Sequence[SnapshotReading], given: torch.Tensor) -> SnapshotReading | None:
    """The first captured step (in the catalogue's order) holding ``given`` at one of its hits."""
    for page in sorted(readings, key=lambda p: p.snap.number):
        if page.captured and page.hit_values and any(
                isinstance(v, torch.Tensor) and same_floats(page.run.as_called(v), given) for v in page.hit_values[0]):
            return page
    return None


def _not_the_output(other: SnapshotReading, encoder_page: SnapshotReading) -> bool:
    """Whether a captured step is a stream the encoder's output is not: one that ran before the encoder had finished
    (its input, an earlier step), or the decoder's own; a later step of another stage may hold the output itself."""
    return other is not encoder_page and (other.order < encoder_page.order or other.snap.stage == DECODER_STAGE)


def kv_from_another_input(readings: Sequence[SnapshotReading],
                          results: dict[int, list[CheckResult]]) -> dict[int, list[CheckResult]]:
    """``results`` with the first captured step (in the catalogue's order) whose line showed a cross-attention's keys
    or values computed from another captured tensor than the encoder's output failing with the bug form "K or V from
    another input" (the module docstring); the others as they were."""
    found = _encoder_output(readings)
    if found is None:
        return results
    encoder_page, encoder_output = found
    for page, what, given, query_input in _given(readings):
        if _is_encoder_output(given, encoder_output):
            continue
        other = _captured_equal(readings, given)
        wrong = ("the query's input (the decoder stream)" if same_floats(given, query_input) else
                 f"your {_named(other)}" if other is not None and _not_the_output(other, encoder_page) else None)
        if wrong is None:
            continue
        _, detail = close(given.double(), encoder_output.double(), "vs the encoder's output") \
            if given.shape == encoder_output.shape else (False, f"its shape {tuple(given.shape)} is not the encoder "
                                                               f"output's {tuple(encoder_output.shape)}")
        message = (f"{K_OR_V_FROM_ANOTHER_INPUT}: {what.format(wrong)}, where the encoder's output belongs (your "
                   f"{_named(encoder_page)} at the last encoder layer, or a LayerNorm of it): {detail}")
        result = CheckResult(name=CLAIM, passed=False, status=FAILED, detail=message,
                             evidence=Evidence(BUG_FORM, K_OR_V_FROM_ANOTHER_INPUT, message))
        return {**results, page.snap.number: [*results.get(page.snap.number, []), result]}
    return results


POSITIONS_ADDED_TWICE = "positions added twice"
POSITIONS_CLAIM = "the positions are added once to the queries and keys of every attention"


def _position_terms(readings: Sequence[SnapshotReading],
                    ) -> Iterator[tuple[SnapshotReading, ModuleCall, str, torch.Tensor]]:
    """What each attention module the marked lines called added to its query or key over its value (DETR's
    ``q = k = src + pos``, ``key = memory + pos``), in the catalogue's order: (the line's page, the call, which
    argument, the term); nothing where the argument is the value itself or of another shape (a cross-attention's
    queries)."""
    for page in sorted(readings, key=lambda p: p.snap.number):
        for call in page.calls if page.captured else ():
            if call.kind != ModuleKind.MULTIHEAD_ATTENTION or call.depth != 1 or len(call.inputs) < len(ARGUMENTS):
                continue
            value = page.run.as_called(call.inputs[2])
            for name, argument in zip(ARGUMENTS[:2], call.inputs[:2]):
                given = page.run.as_called(argument)
                if (isinstance(given, torch.Tensor) and isinstance(value, torch.Tensor) and given.shape == value.shape
                        and given.is_floating_point() and not same_floats(given, value)):
                    yield page, call, name, given - value


def positions_added_twice(readings: Sequence[SnapshotReading],
                          results: dict[int, list[CheckResult]]) -> dict[int, list[CheckResult]]:
    """``results`` with the first captured step (in the catalogue's order) whose line's attention module was given a
    query or key that is its value plus twice what another attention module of the run added to its own (the same
    positions, once there: DETR's encoder ``q = k = src + 2 pos`` beside its cross-attention's ``memory + pos``)
    failing with the bug form "positions added twice"; the others as they were. Terms that agree, or differ otherwise
    (positions of their own, learned per use), say nothing."""
    terms = list(_position_terms(readings))
    for page, call, name, term in terms:
        once = next(((other, other_call, other_name, other_term) for other, other_call, other_name, other_term in terms
                     if other_call is not call and other_term.shape == term.shape and same_floats(term, 2 * other_term)
                     and not same_floats(term, other_term)),  # terms too small to tell once from twice: no evidence
                    None)
        if once is None:
            continue
        other, other_call, other_name, other_term = once
        _, detail = close(term.double(), 2 * other_term.double(), "its term vs twice the other's")
        message = (f"{POSITIONS_ADDED_TWICE}: the {call.module} whose output {page.label}'s line read was given as "
                   f"its {name} its value plus twice the term the {other_call.module} whose output {other.label}'s "
                   f"line read adds to its {other_name} over its value (the positions, added once there): {detail}")
        result = CheckResult(name=POSITIONS_CLAIM, passed=False, status=FAILED, detail=message,
                             evidence=Evidence(BUG_FORM, POSITIONS_ADDED_TWICE, message))
        return {**results, page.snap.number: [*results.get(page.snap.number, []), result]}
    return results
