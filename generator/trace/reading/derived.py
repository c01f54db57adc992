"""Steps nobody marked, derived from the ones that were: where a snapshot is not captured but its check's claim
determines its tensor from captured ones (scores from q and k, the probabilities from the scores of a causal model,
the context from the probabilities and V: ``Check.derive``; the per-head q, k and v from the whole projections through
the catalogue's head split: ``Check.derive_by_layout``), a trace computes it, files it under its record name, and
every check that reads it says so ("derived from S09, S10"), as does its own page. A step the script computed
differently then fails where it is read: a red verdict still means the script's code is not what the claims say."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from transformer_trace.sources import NotCheckable, Ref, TensorDict


def derive_missing(pages: list[Any], tensors: dict[str, torch.Tensor], labels: dict[str, Any],
                   places: dict[str, str], label_of: Any,
                   dims: Mapping[str, int] | None = None) -> dict[str, tuple[str, ...]]:
    """Add to ``tensors`` every tensor the uncaptured steps' checks derive from what is there (repeatedly: the heads
    split from the projections, then the scores, the probabilities, the context), each with its label from
    ``label_of(snapshot label, [labels read])``; return, per uncaptured snapshot's label, the captured steps its tensor
    comes from. ``dims``: the named dimensions the trace bound (the head count ``h`` a head split needs)."""
    source = TensorDict(tensors, places=places)
    roots: dict[str, tuple[str, ...]] = {}
    changed = True
    while changed:
        changed = False
        for page in pages:
            if page.captured:  # a captured step's own check must test what it reads, never what it derived
                continue
            for check in getattr(page.snap, "checks", ()):
                for target, value, read_from in _derived_by(check, source, dims or {}):
                    name = source.name(target)
                    read = [labels[n] for n in dict.fromkeys(source.name(r) for r in read_from if r != target)
                            if n in labels and source.has(n)]
                    owner = labels[name].snapshot if name in labels else page.label  # the snapshot that shows it
                    tensors[name], labels[name] = value, label_of(owner, read)
                    if any(shown.label == owner and not shown.captured for shown in pages):  # its page names them
                        roots[owner] = tuple(dict.fromkeys((*roots.get(owner, ()), *_captured_roots(read, roots))))
                    changed = True
    return roots


def _derived_by(check: Any, source: TensorDict,
                dims: Mapping[str, int]) -> list[tuple[Ref, torch.Tensor, tuple[Ref, ...]]]:
    """What ``check`` derives that ``source`` lacks: (the ref, its tensor, the refs it comes from), by the check's
    layout operations (each per-head tensor from its whole one) and its claim (``derive``)."""
    found: list[tuple[Ref, torch.Tensor, tuple[Ref, ...]]] = []
    try:
        split = check.derive_by_layout(source, dims)
    except (NotCheckable, RuntimeError, ValueError, IndexError):
        split = {}
    for target, (value, whole) in split.items():
        found.append((target, value, (whole,)))
    field = type(check).DERIVES
    if field is None or source.has(target := getattr(check, field)) or split:
        return found
    try:
        value = check.derive(source)
    except (NotCheckable, RuntimeError, ValueError, IndexError):  # an input missing, or shapes that do not fit:
        return found  # nothing derived
    read_from = _deriving(check)
    if not any(ref != target and source.has(ref) for ref in read_from):  # what it read is all optional fields
        read_from = tuple(check.inputs())  # (the scores a causal mask's check derives the masked scores from)
    return found if value is None else [*found, (target, value, read_from)]


def _deriving(check: Any) -> tuple[Ref, ...]:
    """The tensors a check derives its step from: its inputs but the ``OPTIONAL`` ones, which widen what passes (the
    queries and keys a context's bug forms read) and never enter what ``derive`` computes."""
    optional = {name for group in type(check).OPTIONAL for name in group}
    return tuple(ref for name, kind in check.parameters().items() if name not in optional
                 for ref in ((getattr(check, name),) if kind == "tensor" else getattr(check, name) if kind == "tensors"
                             else ()) if ref is not None)


def _captured_roots(read: list[Any], derived: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The captured snapshots behind the labels ``read`` (a derived one's own roots in its place): "G08, G09" for
    probabilities derived from scores derived from q and k."""
    roots: list[str] = []
    for label in read:
        roots += list(derived.get(label.snapshot, ())) or [label.snapshot]
    return tuple(dict.fromkeys(roots))
