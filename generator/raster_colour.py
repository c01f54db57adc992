"""Colour for the pixel figures (generator/raster.py): values to colours exactly as matplotlib's Normalize and
colour maps (their 256-entry tables copied to generator/colormaps/), scales that survive NaN, infinities and empty
arrays, and resampling to a box of pixels."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
from PIL import Image

COLORMAPS = Path(__file__).resolve().parent / "colormaps"  # <name>.rgb: 256 × (r, g, b) bytes


@functools.cache
def colormap(name: str) -> np.ndarray:
    """The colour map's 256 colours, (256, 3) uint8, read from its copied table."""
    return np.frombuffer((COLORMAPS / f"{name}.rgb").read_bytes(), dtype=np.uint8).reshape(256, 3)


def finite_limit(data: np.ndarray) -> float:
    """The largest magnitude among the finite values (a symmetric scale's end); 1 when there is none or it is 0: an
    all-NaN, all-inf or empty tensor of the user's still gets its figure, its cells in the "bad" colour."""
    finite = np.abs(np.asarray(data, dtype=np.float64))
    finite = finite[np.isfinite(finite)]
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def usable_range(vmin: float, vmax: float) -> tuple[float, float]:
    """A colour scale's ends, finite (0 to 1 when either is not: no finite value to scale by)."""
    return (float(vmin), float(vmax)) if math.isfinite(vmin) and math.isfinite(vmax) else (0.0, 1.0)


def colorize(data: np.ndarray, cmap: str, vmin: float, vmax: float) -> np.ndarray:
    """Values -> (..., 3) uint8 colours exactly as matplotlib's Normalize and Colormap (256 bins, clipped ends)."""
    vmin, vmax = usable_range(vmin, vmax)
    values, span = np.asarray(data, dtype=np.float64), vmax - vmin
    if not math.isfinite(span):  # ends near the float64 limits: halved (exactly) so the difference does not overflow
        values, vmin, span = values / 2, vmin / 2, vmax / 2 - vmin / 2
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf: NaN, coloured as NaN is below
        scaled = (values - vmin) / (span if span else 1.0)
    index = np.clip(np.nan_to_num(scaled * 256, nan=0.0, posinf=255, neginf=0), 0, 255).astype(np.intp)
    colours = colormap(cmap)[index]
    colours[np.isnan(data)] = 255  # matplotlib's "bad" colour is transparent: the white background shows
    return colours


def resample(data: np.ndarray, height: int, width: int, smooth: bool) -> np.ndarray:
    """Scale a 2-D array (or an array of colours, nearest only) to ``height`` × ``width``: nearest cell, or
    (``smooth``, shrinking) the mean over each pixel. Sizes below one pixel are one pixel (a 2 × 5000 matrix drawn
    400 wide)."""
    height, width = max(1, height), max(1, width)
    if smooth:
        image = Image.fromarray(np.asarray(data, dtype=np.float32), mode="F")
        return np.asarray(image.resize((width, height), Image.Resampling.BOX))
    rows = np.minimum((np.arange(height) + 0.5) * data.shape[0] // height, data.shape[0] - 1).astype(np.intp)
    cols = np.minimum((np.arange(width) + 0.5) * data.shape[1] // width, data.shape[1] - 1).astype(np.intp)
    return data[rows][:, cols]
