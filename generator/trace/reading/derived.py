"""Steps nobody marked, derived from the ones that were: where a snapshot is not captured but its check's claim
determines its tensor from captured ones (scores from q and k, the probabilities from the scores of a causal model,
the context from the probabilities and V: ``Check.derive``), a trace computes it, files it under its record name, and
every check that reads it says so ("derived from S09, S10"), as does its own page. A step the script computed
differently then fails where it is read: a red verdict still means the script's code is not what the claims say."""

from __future__ import annotations

from typing import Any

import torch

from transformer_trace.sources import NotCheckable, TensorDict


def derive_missing(pages: list[Any], tensors: dict[str, torch.Tensor], labels: dict[str, Any],
                   places: dict[str, str], label_of: Any) -> dict[str, tuple[str, ...]]:
    """Add to ``tensors`` every tensor the uncaptured steps' checks derive from what is there (repeatedly: scores,
    then probabilities, then the context), each with its label from ``label_of(snapshot label, [labels read])``;
    return, per uncaptured snapshot's label, the captured steps its tensor comes from."""
    source = TensorDict(tensors, places=places)
    roots: dict[str, tuple[str, ...]] = {}
    changed = True
    while changed:
        changed = False
        for page in pages:
            if page.captured:  # a captured step's own check must test what it reads, never what it derived
                continue
            for check in getattr(page.snap, "checks", ()):
                field = type(check).DERIVES
                if field is None or source.has(target := getattr(check, field)):
                    continue
                try:
                    value = check.derive(source)
                except (NotCheckable, RuntimeError, ValueError, IndexError):  # an input missing, or shapes that do
                    continue  # not fit: nothing derived
                if value is None:
                    continue
                name = source.name(target)
                read = [labels[n] for n in dict.fromkeys(source.name(r) for r in check.inputs() if r != target)
                        if n in labels and source.has(n)]
                owner = labels[name].snapshot if name in labels else page.label  # the snapshot that shows it
                tensors[name], labels[name] = value, label_of(owner, read)
                if any(shown.label == owner and not shown.captured for shown in pages):  # its page names them
                    roots[owner] = _captured_roots(read, roots)
                changed = True
    return roots


def _captured_roots(read: list[Any], derived: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The captured snapshots behind the labels ``read`` (a derived one's own roots in its place): "G08, G09" for
    probabilities derived from scores derived from q and k."""
    roots: list[str] = []
    for label in read:
        roots += list(derived.get(label.snapshot, ())) or [label.snapshot]
    return tuple(dict.fromkeys(roots))
