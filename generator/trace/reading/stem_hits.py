"""A step inside the layer loop whose code the model also runs before the loop, at other sizes: a Tokens-to-Token ViT's
token transformers call the attention class the blocks call, on more tokens of another width, before the first block
runs. Hit k of a line in the loop is layer k's step (records.py), so those earlier hits would be read as the first
layers, and the named dimensions bound from them (hundreds of tokens of width 8 where the blocks hold 17 of width 16).

They are told by the run itself: the layer's own steps (its input, its residual sums, its output: one hit per layer)
ran L times; a step inside the loop that ran n > L times, whose first n − L hits all came before the first of the
layer's own steps ran and hold tensors of shapes none of its last L hits has, made those n − L hits outside the loop.
The report reads its last L hits, and says so (``without_stem_hits``). A module run several times a layer (one ``Head``
per attention head) runs at the layers' own sizes, in every layer: it is no such stem and keeps its hits."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_trace.trace.markers import Marker
from transformer_trace.trace.reading.capture import Hit, Notice

if TYPE_CHECKING:
    from transformer_trace.catalogue import Report


def _templates(catalogue: Report, number: int | None) -> list[str]:
    snapshot = next((snap for snap in catalogue.snapshots if snap.number == number), None)
    return [ref.template for ref in getattr(snapshot, "tensors", ())[:1]]


def _shapes(hit: Hit) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(value.tensor.shape) for value in hit.values if hasattr(value.tensor, "shape"))


def without_stem_hits(captured: Mapping[Marker, list[Hit]], catalogue: Report,
                      numbering: str) -> tuple[dict[Marker, list[Hit]], Notice | None]:
    """``captured`` less the hits each step inside the layer loop made before the loop began, at sizes none of its
    layers' hits has, and the overview's notice of them (None: no such hits)."""
    ours = {marker: hits for marker, hits in captured.items()
            if marker.numbering == numbering and marker.number is not None and hits and not marker.alternatives}
    in_loop = {marker: templates for marker in ours
               if (templates := _templates(catalogue, marker.number)) and "{" in templates[0]}
    own = [marker for marker, templates in in_loop.items() if re.fullmatch(r"\{\w+\}\.\w+", templates[0])]
    if not own:
        return dict(captured), None
    layers = max(len(ours[marker]) for marker in own)
    begins = min(ours[marker][0].order for marker in own)
    kept, stem = dict(captured), []
    for marker in in_loop:
        hits = ours[marker]
        extra = len(hits) - layers
        if marker in own or extra <= 0 or any(hit.order >= begins for hit in hits[:extra]):
            continue
        layer_shapes = {_shapes(hit) for hit in hits[extra:]}
        if any(_shapes(hit) in layer_shapes for hit in hits[:extra]):
            continue
        kept[marker] = hits[extra:]
        stem.append(f"{marker.text!r} ({Path(marker.file).name}:{marker.line}, {extra} of {len(hits)})")
    if not stem:
        return kept, None
    return kept, Notice("Hits before the layers", f"{', '.join(stem)} also ran before the first layer began, at other "
                        "sizes than its layers (code the model runs before its blocks too, such as a Tokens-to-Token "
                        "module's own transformers): the report reads the hits made in the layers")
