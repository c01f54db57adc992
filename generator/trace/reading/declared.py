"""What the catalogue declares of each snapshot a trace reads, and what its captured tensors bind: the named shape of
each tensor (the catalogue's own, else its model's declared record point), what the model declares the tensor to be,
and the named dimensions a page's shape binds ("h = 4 (attention heads)"). Read by the trace's reading (pages.py
``read_snapshots``) and by the snapshot table (generator/snapshot_table.py)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from transformer_trace.catalogue import Report, Snapshot
from transformer_trace.trace.reading.records import places_for
from transformer_trace.trace.reading.verify import Layout


def named_shapes(catalogue: Report, places: dict[str, str],
                 declared: dict[str, Any]) -> dict[int, tuple[tuple[str, ...] | None, ...]]:
    """Snapshot number -> the named shape of each of its tensors: the catalogue's own (a slice), else the model's
    declared record point (issue 19: shapes are declared once, in the model file)."""
    shapes: dict[int, tuple[tuple[str, ...] | None, ...]] = {}
    for snap in catalogue.snapshots:
        tensors = getattr(snap, "tensors", ())
        found: list[tuple[str, ...] | None] = []
        for k, ref in enumerate(tensors or (None,)):
            if k == 0 and snap.shape:
                found.append(tuple(snap.shape))
            elif ref is not None and (entry := declared.get(ref.name(places))) is not None:
                found.append(tuple(entry.shape))
            else:
                found.append(None)
        shapes[snap.number] = tuple(found)
    return shapes


def declared_doc(snap: Snapshot, places: dict[str, str], declared: dict[str, Any]) -> str:
    """What the catalogue's model declares its first tensor to be (models/*.py ``Point.doc``), for the explanation."""
    refs = getattr(snap, "tensors", ())
    entry = declared.get(refs[0].name(places)) if refs else None
    return getattr(getattr(entry, "point", None), "doc", "") or ""


def declared_shapes(catalogue: Report) -> dict[int, tuple[tuple[str, ...] | None, ...]]:
    """Snapshot number -> the named shape of each of its tensors (``named_shapes``, the record names at layer 1's)."""
    places = places_for(catalogue, 1)
    declared = catalogue.run_options().record_points() if places is not None else {}
    return named_shapes(catalogue, places or {}, declared)


def declared_docs(catalogue: Report) -> dict[int, str]:
    """Snapshot number -> what the catalogue's model declares its first tensor to be (``declared_doc``)."""
    places = places_for(catalogue, 1)
    declared = catalogue.run_options().record_points() if places is not None else {}
    return {snap.number: declared_doc(snap, places or {}, declared) for snap in catalogue.snapshots}


@functools.cache
def _first_layers_points(catalogue: Report) -> tuple[dict[str, str], dict[str, Any]]:
    """The catalogue's placeholders at layer 1 and its model's record points there (none for a script's own points)."""
    places = places_for(catalogue, 1)
    return places or {}, catalogue.run_options().record_points() if places is not None else {}


def meaning_of(snap: Snapshot, catalogue: Report, name: str, places: Mapping[str, str]) -> str:
    """What the catalogue's model declares the tensor ``name`` to be (its ``Point.doc``: "the last encoder layer's
    output, read by every cross-attention"), where ``name`` is one the snapshot or its checks read at ``places``; ""
    where the catalogue declares nothing of it."""
    first, declared = _first_layers_points(catalogue)
    for ref in snap.inputs():
        try:
            if ref.name(places) == name and (entry := declared.get(ref.name(first))) is not None:
                return str(entry.point.doc)
        except KeyError:  # a placeholder the layer does not fill
            continue
    return ""


def bound_names(named: tuple[str, ...], layout: Layout | None, shown: tuple[int, ...],
                legend: dict[str, str]) -> tuple[str, ...]:
    """The named dimensions a page's tensor binds: "h = 4 (attention heads)"."""
    sizes = layout.expected if layout is not None and layout.expected else shown
    found: list[str] = []
    for expression, size in zip(named, sizes):
        if expression.isdigit():  # a literal size (the mask's broadcast axes) names nothing
            continue
        text = f"{expression} = {size}" + (f" ({legend[expression]})" if legend.get(expression) else "")
        if text not in found:
            found.append(text)
    return tuple(found)
