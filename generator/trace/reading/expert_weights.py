"""A mixture of experts' output checked from its own module calls (experts.py recognises one): the call that ran the
routed experts also ran its router, whose first output holds, per token, a score for each expert — probabilities
(makeMoE's softmax over the kept top k, or a softmax over every expert) or logits, read through a softmax. Each
expert call's input rows say which tokens it was given (a capacity's dropped tokens are simply absent), and the
router's chosen experts (its integer output, else each row's top k) say which expert each call is. The step is then

    Σ over the experts each token was given to of (its router weight) × (that expert's output for the token)

plus the output of any expert given every token (a shared expert). The router weight of a correct form is the score
itself or the scores renormalised over the kept experts (Mixtral's softmax over the top k; Switch's and Qwen-MoE's
unnormalised probability are the first form), so weights summing to less than 1 are no bug here. Where no correct
form fits, the bug forms tried are: the router weights left out; one expert per token (each token given only its
last or first expert's weighted output, an ``index_copy_`` for an ``index_add_``); every expert weighted by another
expert's probability (one column for all). None fitting leaves the step unrecognised, as before."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from transformer_trace.checks.base import close
from transformer_trace.trace.reading.capture import ModuleCall

CLAIM = "the experts' outputs weighted by the router's probabilities and summed per token"
WEIGHTS_LEFT_OUT = "expert weights left out"
ONE_EXPERT_PER_TOKEN = "one expert per token"
ANOTHER_EXPERTS_PROBABILITY = "another expert's probability"


@dataclass(frozen=True)
class Routed:
    """What the calls show: each routed expert call's tokens (row indices into the flat input), its output, and its
    column in the router's scores; the router's weights per form; the shared experts' summed output."""

    tokens: list[torch.Tensor]
    outputs: list[torch.Tensor]
    columns: list[int]
    weights: dict[str, torch.Tensor]  # the correct forms' (N, E) weights, by how they are read
    shared: torch.Tensor  # (N, C), zeros where none


@dataclass(frozen=True)
class Verdict:
    passed: bool
    form: str  # the bug form that fitted ("" where passed)
    message: str


def _row_indices(part: torch.Tensor, rows: torch.Tensor) -> torch.Tensor | None:
    """The index in ``rows`` of each row of ``part``, where each matches exactly one."""
    equal = (part[:, None, :] == rows[None, :, :]).all(-1)
    if not bool((equal.sum(-1) == 1).all()):
        return None
    return equal.float().argmax(-1)


def _router_scores(callees: Sequence[ModuleCall], expert_class: str, tokens: int,
                   shared: Sequence[ModuleCall]) -> tuple[torch.Tensor, ...] | None:
    """The router's scores (N, E) and its chosen experts (N, k) where it returned them: the first callee of another
    class whose first output holds a score per token and expert (or per token and kept expert, beside the chosen
    experts)."""
    for call in callees:
        if (call.module == expert_class or not call.outputs or call.outputs[0] is None
                or any(call is other for other in shared)):
            continue
        scores = call.outputs[0]
        if not scores.is_floating_point() or scores.numel() % tokens or scores.numel() // tokens < 2:
            continue
        scores = scores.reshape(tokens, -1).double()
        chosen = next((t.reshape(tokens, -1) for t in call.outputs[1:] if t is not None and not t.is_floating_point()
                       and t.numel() % tokens == 0), None)
        return (scores,) if chosen is None else (scores, chosen.long())
    return None


def _io(call: ModuleCall) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The call's first input and first output, where both were copied."""
    given = call.inputs[0] if call.inputs else None
    made = call.outputs[0] if call.outputs else None
    return None if given is None or made is None else (given, made)


def read_routing(given: torch.Tensor, callees: Sequence[ModuleCall], expert_class: str) -> Routed | None:
    """The routing the calls show (the module docstring), or None where they do not tell it whole."""
    flat = given.reshape(-1, given.shape[-1])
    copied = [(call, io) for call in callees for io in [_io(call)] if io is not None]
    routed = [io for call, io in copied if call.module == expert_class and io[0].shape[0] < flat.shape[0]]
    # a shared expert, of the routed class or not (DeepSeek-V3's MLP): given every token, returning their shape
    shared = [call for call, (x, y) in copied if x.numel() == flat.numel() == y.numel()
              and bool(torch.equal(x.reshape(flat.shape), flat))]
    found = _router_scores(callees, expert_class, flat.shape[0], shared)
    if not routed or found is None:
        return None
    scores, compact = found[0], len(found) > 1 and found[1].shape == found[0].shape
    if compact:  # the kept experts' weights alone, beside their indices (DeepSeek-V3's gate)
        scores = torch.zeros(flat.shape[0], int(found[1].max()) + 1, dtype=scores.dtype).scatter(-1, found[1],
                                                                                                  scores)
    tokens = [_row_indices(x, flat) for x, _ in routed]
    rows_of = [t for t in tokens if t is not None]
    if len(rows_of) < len(tokens) or any(y.shape[0] != x.shape[0] for x, y in routed):
        return None
    counts = torch.zeros(flat.shape[0], dtype=torch.long)
    for rows in rows_of:
        counts[rows] += 1
    # the chosen experts as returned, else each row's top k, k the most experts one token was given to
    chosen = found[1] if len(found) > 1 else scores.topk(int(counts.max()), dim=-1).indices
    columns = _columns(rows_of, chosen, scores.shape[1])
    if columns is None:
        return None
    probabilities = scores if compact or _distributions(scores) else torch.softmax(scores, dim=-1)
    kept = torch.zeros_like(probabilities).scatter(-1, chosen, 1.0) * probabilities
    weights = {"the router's probability": probabilities,
               "the router's probabilities renormalised over the kept experts":
                   kept / kept.sum(-1, keepdim=True).clamp_min(1e-30)}
    total = torch.zeros(flat.shape, dtype=torch.float64)
    for call in shared:
        total += call.outputs[0].reshape(flat.shape).double()  # type: ignore[union-attr]  # copied (above)
    return Routed(rows_of, [y.double() for _, y in routed], columns, weights, total)


def _distributions(scores: torch.Tensor) -> bool:
    return bool((scores >= 0).all()) and bool(torch.allclose(scores.sum(-1), torch.ones(scores.shape[0],
                                                                                         dtype=scores.dtype)))


def _columns(tokens: list[torch.Tensor], chosen: torch.Tensor, experts: int) -> list[int] | None:
    """Each routed call's expert: a column every one of its tokens chose, the calls with one such column placed
    first, then each in call order on the first column left."""
    fits = [{e for e in range(experts) if bool((chosen[rows] == e).any(-1).all())} for rows in tokens]
    columns: list[int | None] = [None] * len(tokens)
    while None in columns:
        left = [i for i, column in enumerate(columns) if column is None]
        single = [i for i in left if len(fits[i]) == 1]
        index = single[0] if single else left[0]
        if not fits[index]:
            return None
        columns[index] = min(fits[index])
        fits = [f - {columns[index]} for f in fits]
    return [int(c) for c in columns if c is not None]


def _summed(routing: Routed, weight_of: Callable[[int, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """Σ over the routed calls of (weight_of(call, its tokens) × its output), added at its tokens, plus the shared."""
    total = routing.shared.clone()
    for index, (rows, out) in enumerate(zip(routing.tokens, routing.outputs)):
        total.index_add_(0, rows, weight_of(index, rows)[:, None] * out)
    return total


def _own_column(routing: Routed, weights: torch.Tensor) -> Callable[[int, torch.Tensor], torch.Tensor]:
    return lambda index, rows: weights[rows, routing.columns[index]]


def _column(weights: torch.Tensor, column: int) -> Callable[[int, torch.Tensor], torch.Tensor]:
    return lambda index, rows: weights[rows, column]


def _one_each(routing: Routed, weights: torch.Tensor, last: bool) -> torch.Tensor:
    """Each token given only one of its experts' weighted outputs: the last call's (an overwrite) or the first's."""
    total = routing.shared.clone()
    order = range(len(routing.tokens))
    for index in (order if last else reversed(order)):
        rows = routing.tokens[index]
        total[rows] = routing.shared[rows] + weights[rows, routing.columns[index]][:, None] * routing.outputs[index]
    return total


def judged(step: torch.Tensor, routing: Routed) -> Verdict | None:
    """The step judged against the correct forms, then the bug forms (the module docstring); None where none fits."""
    actual = step.reshape(routing.shared.shape).double()
    tried = []
    for how, weights in routing.weights.items():
        fits, detail = close(actual, _summed(routing, _own_column(routing, weights)),
                             f"vs each token's experts weighted by {how}")
        if fits:
            return Verdict(True, "", f"{CLAIM}: {detail}")
        tried.append(detail)
    probabilities = routing.weights["the router's probability"]
    forms: list[tuple[str, str, torch.Tensor]] = [
        (WEIGHTS_LEFT_OUT, "the experts' outputs summed without the router's weights",
         _summed(routing, _column(torch.ones_like(probabilities), 0)))]
    for how, weights in routing.weights.items():
        for last in (True, False):
            forms.append((ONE_EXPERT_PER_TOKEN, f"each token given only its {'last' if last else 'first'} expert's "
                          f"output weighted by {how}, where it was routed to {_most(routing)}",
                          _one_each(routing, weights, last)))
    for column in range(probabilities.shape[1]):
        if any(column != own for own in routing.columns):
            forms.append((ANOTHER_EXPERTS_PROBABILITY, f"every expert weighted by the router's probability of "
                          f"expert {column}, not its own", _summed(routing, _column(probabilities, column))))
    for name, what, expected in forms:
        fits, detail = close(actual, expected, f"vs {what}")
        if fits:
            return Verdict(False, name, f"{name}: your step is {what} ({detail}); the correct forms do not fit "
                                        f"({'; '.join(tried)})")
    return None


def _most(routing: Routed) -> str:
    counts = torch.zeros(routing.shared.shape[0], dtype=torch.long)
    for rows in routing.tokens:
        counts[rows] += 1
    return f"{int(counts.max())} experts"
