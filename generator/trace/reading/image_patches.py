"""Flattened patches checked against the image itself (issue 40, rounds ten and eleven: one einops ``rearrange`` cuts
the image and flattens each patch, ``'b c (nh ph) (nw pw) -> b (nh nw) (ph pw c)'``, so the 4-D patches the flattened
step's check reads are on no line and cannot be marked). The step (B, N, P·P·Ch) is then not checkable against them;
the captured image (B, Ch, H, W) that the patches step's own check names tells it instead: each row of the step holds
the pixels of one P×P patch of the image. Which patch each row holds is the order the model reads them in, row by row
(the catalogue's, and every ViT's positions are learned or tabled for it); the pixel order inside a patch is the
script's own choice (channel-last ``(ph pw c)`` or the catalogue's ``(c ph pw)``), so a row is compared with its patch
as a set of values. Rows that hold the patches column by column fail with the bug form "patches taken column by
column"; rows that each hold P×P pixels a grid apart (`'b c (p1 h) (p2 w) -> b (h w) (p1 p2 c)'`: the patch and grid
axes swapped, each token a strided sample of the whole image) with "pixels a grid apart, not a patch"; rows that fit
none leave the step as it was."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import FAILED, NOT_CHECKABLE, PASSED, CheckResult, close
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.sources import Ref

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

COLUMN_BY_COLUMN = "patches taken column by column"
STRIDED = "pixels a grid apart, not a patch"
CLAIM = "each row holds the pixels of one patch of the image, the patches row by row"


def _patches(image: torch.Tensor, size: int, by_rows: bool) -> torch.Tensor:
    """The image's P×P patches (B, N, Ch·P·P), each patch's values sorted, row by row or column by column."""
    b, ch, h, w = image.shape
    grid = image.reshape(b, ch, h // size, size, w // size, size).permute(0, 2, 4, 1, 3, 5)  # (B, nh, nw, Ch, P, P)
    if not by_rows:
        grid = grid.transpose(1, 2)
    return grid.reshape(b, -1, ch * size * size).sort(-1).values


def _image_of(readings: Sequence[SnapshotReading], page: SnapshotReading) -> SnapshotReading | None:
    """The captured image: the record a patches check (``image``) of an uncaptured step before ``page`` names."""
    named = {check.image for other in readings if not other.captured and other.snap.number < page.snap.number
             for check in getattr(other.snap, "checks", ()) if isinstance(getattr(check, "image", None), Ref)}
    return next((other for other in readings if other.captured and other.snap.tensors
                 and other.snap.tensors[0] in named), None)


def _judged(step: torch.Tensor, image: torch.Tensor, page: SnapshotReading, shown: SnapshotReading,
            ) -> CheckResult | None:
    if step.dim() != 3 or image.dim() != 4 or step.shape[0] != image.shape[0] or step.shape[2] % image.shape[1]:
        return None
    size = math.isqrt(step.shape[2] // image.shape[1])
    _, _, h, w = image.shape
    if size < 2 or size * size * image.shape[1] != step.shape[2] or h % size or w % size \
            or (h // size) * (w // size) != step.shape[1]:
        return None
    rows = step.double().sort(-1).values
    by_rows, detail = close(rows, _patches(image.double(), size, True), "each row's values vs its patch's, row by row")
    name = f"{shown.main.variable or shown.label} ({shown.label})"
    if by_rows:
        return CheckResult(name=f"{CLAIM} (read from the image {name}: the pixel order inside a patch not checked)",
                           passed=True, status=PASSED, detail=detail)
    by_columns, more = close(rows, _patches(image.double(), size, False), "vs the patches column by column")
    if not by_columns:
        return _strided(rows, image, size, page, name, detail)
    message = (f"{COLUMN_BY_COLUMN}: row n of your {page.main.variable or page.label} ({page.label}) holds the pixels "
               f"of patch n of {name} counted down the columns, where the patches are read row by row ({more}; "
               f"{detail})")
    return CheckResult(name=CLAIM, passed=False, status=FAILED, detail=message,
                       evidence=Evidence(BUG_FORM, COLUMN_BY_COLUMN, message))


def _strided(rows: torch.Tensor, image: torch.Tensor, size: int, page: SnapshotReading, name: str,
             detail: str) -> CheckResult | None:
    """The step's rows as P×P pixels a grid apart (the image cut `(p1 h) (p2 w)`: token (i, j) holds the pixels
    (p1·H/P + i, p2·W/P + j)), a bug form; None where they are not."""
    b, ch, h, w = image.shape
    strided = image.double().reshape(b, ch, size, h // size, size, w // size).permute(0, 3, 5, 1, 2, 4)
    fits, more = close(rows, strided.reshape(b, -1, ch * size * size).sort(-1).values,
                       "vs the pixels a grid apart, row by row")
    if not fits:
        return None
    message = (f"{STRIDED}: row n of your {page.main.variable or page.label} ({page.label}) holds {size}×{size} "
               f"pixels of {name} {h // size} rows and {w // size} columns apart, where a patch is {size}×{size} "
               f"neighbouring pixels: the image was cut with its patch and grid axes swapped ({more}; {detail})")
    return CheckResult(name=CLAIM, passed=False, status=FAILED, detail=message,
                       evidence=Evidence(BUG_FORM, STRIDED, message))


def patches_of_the_image(readings: Sequence[SnapshotReading],
                         results: dict[int, list[CheckResult]]) -> dict[int, list[CheckResult]]:
    """``results`` with each flattened-patches step not checkable for want of the 4-D patches read against the captured
    image instead (the module docstring); the others as they were."""
    for page in readings:
        found = results.get(page.snap.number, [])
        if not page.captured or not found or any(r.status != NOT_CHECKABLE for r in found):
            continue
        shown = _image_of(readings, page)
        step = page.main.shown.tensor
        if shown is None or not isinstance(step, torch.Tensor) or not isinstance(shown.main.shown.tensor,
                                                                                   torch.Tensor):
            continue
        judged = _judged(page.main_as_called, shown.main_as_called, page, shown)
        if judged is not None:
            results = {**results, page.snap.number: [judged]}
    return results
