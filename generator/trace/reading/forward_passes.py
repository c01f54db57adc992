"""A script that runs its model more than once (an inference then a training step, a training loop, a second input,
token-by-token generation): its marked lines ran once per forward pass, and the steps inside the layer loop once per
layer of each. A check reads its inputs from one forward pass only: the report keeps the first (the one a breakpoint
stops in first; a later one may be in training mode, with dropout between the steps), and says so.

How many forward passes ran is told by the steps outside the layer loop: several of them reached equally often, and
every step inside the loop a whole number of times as often. The first pass ends where the earliest of them is reached
a second time: every hit before that is kept (the input made once before the loop too), every hit after it dropped (a
step reached only later is not shown). Where the counts do not tell, every hit is kept, as for one pass.

A step may also run before the script's input exists: a model that runs its own embedding on a dummy tensor while it is
built, to learn its sequence length (CCT's tokenizer). Hits of a step made before the first hit of the script's input
step (the catalogue's first, S01 / #1 / G01), where that step runs again after it, are such a dry run: the report
reads the hits after it (``without_dry_runs``), and says so."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_trace.trace.markers import Marker
from transformer_trace.trace.reading.capture import Hit, Notice

if TYPE_CHECKING:
    from transformer_trace.catalogue import Report


def without_dry_runs(captured: Mapping[Marker, list[Hit]], catalogue: Report,
                     numbering: str) -> tuple[dict[Marker, list[Hit]], Notice | None]:
    """``captured`` less the hits each of our steps made before the script's input step first ran, where the step
    ran again after it, and the overview's notice of them (None: no step ran before the input)."""
    first = min((snap.number for snap in catalogue.snapshots), default=None)
    inputs = [hits[0].order for marker, hits in captured.items()
              if marker.numbering == numbering and marker.number == first and hits]
    if not inputs:
        return dict(captured), None
    made = min(inputs)
    kept, dry = dict(captured), []
    for marker, hits in captured.items():
        after = [hit for hit in hits if hit.order > made]
        if marker.numbering == numbering and marker.number != first and after and len(after) < len(hits):
            kept[marker] = after
            dry.append(f"{marker.text!r} ({Path(marker.file).name}:{marker.line})")
    if not dry:
        return kept, None
    return kept, Notice("A run before the input", f"{', '.join(dry)} also ran before the script's input step was first "
                        "reached (a dry run while the model was built, on a tensor of its own): the report reads the "
                        "hits made after the input")


def first_forward_pass(captured: Mapping[Marker, list[Hit]], catalogue: Report,
                       numbering: str) -> tuple[dict[Marker, list[Hit]], int, Notice | None]:
    """The hits of the first forward pass of ``captured`` (every marker's hits), the number of passes that ran, and the
    overview's notice of the passes left out (None: one ran)."""
    loop = {snap.number for snap in catalogue.snapshots if any("{" in str(ref) for ref in snap.tensors)}
    kept = dict(captured)
    ours = {marker: hits for marker, hits in captured.items()
            if marker.numbering == numbering and marker.number is not None}

    def in_loop(marker: Marker) -> bool:
        return bool(marker.alternatives) or marker.number in loop

    once_a_pass = [(len(hits), marker) for marker, hits in ours.items()
                   if not in_loop(marker) and not marker.loop_body and not marker.entry_line]
    # Several steps outside the loop reached equally often: the passes. One alone may be a step the script computes in
    # each layer (a causal mask made inside the block); steps inside the loop run a whole number of times a pass.
    counts = Counter(count for count, marker in {(c, m.number) for c, m in once_a_pass} if count > 1)
    passes = max((count for count, steps in counts.items() if steps >= 2), key=lambda c: (counts[c], -c), default=1)
    if passes == 1 or any(len(hits) % passes for marker, hits in ours.items() if in_loop(marker)):
        return kept, 1, None
    told_by = min((m for count, m in once_a_pass if count == passes), key=lambda m: ours[m][0].order)
    first_pass_starts, second_pass_starts = ours[told_by][0].order, ours[told_by][1].order
    if any(all(hit.order < second_pass_starts for hit in hits) and hits[-1].order >= first_pass_starts
           for hits in ours.values()):
        # a step of the "first pass" never ran again: one pass running shared code twice (source and target through
        # one embedding class), not a second pass
        return kept, 1, None
    later = []
    for marker, hits in ours.items():
        first = [hit for hit in hits if hit.order < second_pass_starts]
        if first:
            kept[marker] = first
        else:
            del kept[marker]
            later.append(marker.text)
    only_later = f"; reached only in a later pass, not shown: {', '.join(sorted(set(later)))}" if later else ""
    return kept, passes, Notice(
        "Several forward passes", f"the model ran {passes} times ({Path(told_by.file).name}:{told_by.line} "
        f"{told_by.text!r} was reached {passes} times): the report reads the first forward pass, and the hits of the "
        f"{passes - 1} after it are not used (--hit counts the layers within it){only_later}")
