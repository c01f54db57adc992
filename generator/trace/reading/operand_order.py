"""A step of several tensors marked with its names in another order than the catalogue's: `# Snapshot #14: x,
residual_x` names the sublayer output first, where the catalogue's ``res1_a, res1_b`` is the stream, then the sublayer
output. The student cannot know the catalogue's order, so the names do not decide it: the tensors another step shows
do. Where a step's tensor equals, value for value, the tensor another step captured under the record name of another
of its positions, and the catalogue's order gives fewer such agreements than another order, the step's tensors are
read in that order (a sum's operands, the q/k/v of a split: whatever the catalogue lists together)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any, TypeVar

import torch

Marked = TypeVar("Marked")
MOST = 4  # orders tried: every permutation of at most this many tensors (a step lists two or three)


def _value(held: Any) -> torch.Tensor | None:
    tensor = None if held.absent else held.tensor
    return tensor if isinstance(tensor, torch.Tensor) and tensor.numel() else None


def _others(marked: list[Any]) -> dict[str, list[torch.Tensor]]:
    """Record template (``{enc}.input``) -> the tensors steps of one tensor show under it, as captured."""
    shown: dict[str, list[torch.Tensor]] = {}
    for m in marked:
        refs: tuple[Any, ...] = tuple(getattr(m.snap, "tensors", ()))
        if len(refs) == 1 and len(m.held) == 1 and (value := _value(m.held[0])) is not None:
            shown.setdefault(str(refs[0]), []).append(value)
    return shown


def _agreements(refs: tuple[Any, ...], values: list[torch.Tensor | None], order: tuple[int, ...],
                shown: dict[str, list[torch.Tensor]]) -> int:
    """How many of the step's tensors, placed as ``order`` says, equal what another step shows under their record."""
    return sum(any(value is not None and other.shape == value.shape and bool(torch.equal(other, value))
                   for other in shown.get(str(ref), ()))
               for ref, value in zip(refs, (values[i] for i in order)))


def steps_in_catalogue_order(marked: list[Marked]) -> list[Marked]:
    """``marked`` (reading/pages.py ``_Marked``), each step of several tensors read in the order the other steps'
    tensors agree with best, the catalogue's where none agrees better."""
    shown = _others(marked)
    result = []
    for m in marked:
        refs: tuple[Any, ...] = tuple(getattr(getattr(m, "snap", None), "tensors", ()))
        sections: list[Any] = list(getattr(m, "held", ()))
        if not shown or len(refs) < 2 or len(sections) != len(refs) or len(refs) > MOST:
            result.append(m)
            continue
        values = [_value(section) for section in sections]
        identity = tuple(range(len(refs)))
        best = max(itertools.permutations(identity), key=lambda order: (_agreements(refs, values, order, shown),
                                                                        order == identity))
        if best == identity or _agreements(refs, values, best, shown) <= _agreements(refs, values, identity, shown):
            result.append(m)
            continue
        result.append(replace(m, held=tuple(sections[i] for i in best),  # type: ignore[type-var]
                              hit_values=tuple(m.hit_values[i] for i in best),  # type: ignore[attr-defined]
                              tensor_lines=tuple(m.tensor_lines[i] for i in best)))  # type: ignore[attr-defined]
    return result
