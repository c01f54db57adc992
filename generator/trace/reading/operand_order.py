"""A step of several tensors marked with its names in another order than the catalogue's: `# Snapshot #14: x,
residual_x` names the sublayer output first, where the catalogue's ``res1_a, res1_b`` is the stream, then the sublayer
output. The student cannot know the catalogue's order, so the names do not decide it: the tensors another step shows
do. Where a step's tensor equals, value for value, the tensor another step captured under the record name of another
of its positions, and the catalogue's order gives fewer such agreements than another order, the step's tensors are
read in that order (a sum's operands, the q/k/v of a split: whatever the catalogue lists together).

Where no other step decides, the script's own names do, when each names one of the catalogue's variables (``k, v =
...`` and ``q, = ...`` on two lines marked #12: ``k`` is ``k_heads``), as they do for several lines of one snapshot
(pages.py ``in_catalogue_order``).

It decides orders only (indexes into each step's tensors): the reading applies them to its own marked steps
(reading/pages.py ``_Marked.in_order``), which it reads here through ``Operands``."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Protocol

import torch

from transformer_trace.sources import Ref

MOST = 4  # orders tried: every permutation of at most this many tensors (a step lists two or three)
Order = tuple[int, ...]


class Operands(Protocol):
    """What the ordering reads of a marked step: its record names in the catalogue's order, and its values at the hit
    its page shows in the order the script marked them (None: no tensor there, or an empty one)."""

    @property
    def records(self) -> tuple[Ref, ...]: ...

    @property
    def operands(self) -> tuple[torch.Tensor | None, ...]: ...

    @property
    def names(self) -> tuple[tuple[str, ...], tuple[str, ...]]: ...


def _others(steps: Sequence[Operands]) -> dict[str, list[torch.Tensor]]:
    """Record template (``{enc}.input``) -> the tensors steps of one tensor show under it, as captured."""
    shown: dict[str, list[torch.Tensor]] = {}
    for step in steps:
        values = step.operands
        if len(step.records) == 1 and len(values) == 1 and values[0] is not None:
            shown.setdefault(str(step.records[0]), []).append(values[0])
    return shown


def _agreements(records: tuple[Ref, ...], values: tuple[torch.Tensor | None, ...], order: Order,
                shown: dict[str, list[torch.Tensor]]) -> int:
    """How many of the step's tensors, placed as ``order`` says, equal what another step shows under their record."""
    return sum(any(value is not None and other.shape == value.shape and bool(torch.equal(other, value))
                   for other in shown.get(str(record), ()))
               for record, value in zip(records, (values[i] for i in order)))


def _order(step: Operands, shown: dict[str, list[torch.Tensor]]) -> Order:
    """The order one step's tensors are read in: the one the other steps' tensors agree with best, the catalogue's
    (the identity) where none agrees better."""
    records, values = step.records, step.operands
    identity = tuple(range(len(values)))
    if len(records) < 2 or len(values) != len(records) or len(records) > MOST:
        return identity
    best = max(itertools.permutations(identity),
               key=lambda order: (_agreements(records, values, order, shown), order == identity))
    if _agreements(records, values, best, shown) <= _agreements(records, values, identity, shown):
        named = _named_order(*step.names)
        agreed = _agreements(records, values, identity, shown)
        return named if named is not None and _agreements(records, values, named, shown) >= agreed else identity
    return best


def _named_order(variables: tuple[str, ...], names: tuple[str, ...]) -> Order | None:
    """The order the script's names (``names``, as marked) give, where each names exactly one of the catalogue's
    ``variables``, each a different one (``k`` -> ``k_heads``, ``q`` -> ``q_heads_m``); None otherwise (``x``,
    ``residual`` name no operand of a sum)."""
    if len(names) < 2 or len(names) != len(variables):
        return None
    places = []
    for name in names:
        found = [i for i, v in enumerate(variables) if v == name or v.startswith(name + "_")]
        if len(found) != 1:
            return None
        places.append(found[0])
    if len(set(places)) != len(places):
        return None
    return tuple(sorted(range(len(names)), key=places.__getitem__))


def catalogue_orders(steps: Sequence[Operands]) -> list[Order]:
    """Per step of ``steps``: the order its tensors are read in (indexes into its ``operands``), found from what the
    steps of one tensor show."""
    shown = _others(steps)
    return [_order(step, shown) for step in steps]
