"""Figures for the report pages, drawn from the captured tensors.

A drawing is a typed object (a frozen dataclass, like a check): its fields are its parameters,
``Ref`` fields the recorded tensors it draws (its ``inputs()``), ``InputRef`` fields run inputs such
as axis labels, ``ParamRef`` fields model parameters, and ``uses`` names the other run inputs it
reads. ``draw(run, path)`` writes the figure; ``content_key(run)`` digests exactly those declared
inputs, so an unchanged figure is copied instead of redrawn. Files are PNG without timestamps, so
the same tensors give the same bytes. ``DRAWINGS`` lists the generic drawings; a report's figures.py
lists its own in its ``DRAWINGS``. Every figure is drawn with Pillow (transformer_trace.raster): heat maps,
attention grids, masks and image overlays as colour-mapped pixels, charts with axes of numbers (bars,
lines, markers, legends) as antialiased shapes in matplotlib's look; no report imports matplotlib.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from transformer_trace import raster
from transformer_trace.checks import INPUT, MODULE, PARAMETER, TENSOR, TENSORS, Typed, mask_allows
from transformer_trace.registry import Registry
from transformer_trace.run import ModelRun
from transformer_trace.sources import InputRef, Ref

DPI = raster.DPI



@dataclass(frozen=True, kw_only=True)
class Drawing(Typed):
    """Base of every drawing: a frozen, keyword-only dataclass that implements ``draw``."""

    # run inputs it draws on besides its InputRef fields (e.g. the sentence's words)
    uses: ClassVar[tuple[str, ...]] = ()

    def draw(self, run: ModelRun, path: Path) -> None:
        raise NotImplementedError

    def content_key(self, run: ModelRun) -> str:
        """A digest of everything the figure is drawn from, read from its declared inputs: same key, same picture.

        The code of this module and of the drawing's, the drawing's parameters (placeholders filled), the
        bytes of its tensors and parameters, and the values of the run inputs it reads.
        """
        files = {Path(__file__), Path(inspect.getfile(type(self)))}
        digest = hashlib.sha256(b"".join(hashlib.sha256(path.read_bytes()).digest() for path in sorted(files)))
        kinds = self.parameters()
        described = {f.name: _described(run, getattr(self, f.name), kinds[f.name]) for f in fields(self)}
        digest.update(json.dumps([self.key(), described], sort_keys=True, ensure_ascii=False).encode())
        for ref in self.inputs():
            tensor = run.cpu(ref)
            digest.update(f"{run.name(ref)}{tuple(tensor.shape)}{tensor.dtype}".encode()
                          + tensor.contiguous().numpy().tobytes())
        for ref in self.refs_of(PARAMETER):
            digest.update(run.parameter(ref).numpy().tobytes())
        for ref in self.inputs():  # the label lists its tensors' declared axes take (see axis_words)
            named = run.declared[run.name(ref)].shape if run.name(ref) in run.declared else ()
            digest.update(json.dumps([_declared_words(run, symbol) for symbol in named], ensure_ascii=False).encode())
        for key in [*(str(ref) for ref in self.refs_of(INPUT)), *self.uses]:
            value = run.inputs[key]
            if isinstance(value, torch.Tensor):
                value = value.contiguous().numpy()
            digest.update(value.tobytes() if hasattr(value, "tobytes")
                          else json.dumps(value, sort_keys=True, ensure_ascii=False).encode())
        return digest.hexdigest()


    def axis_words(self, run: ModelRun, explicit: InputRef | None, ref: Ref, axis: int) -> list[str] | None:
        """The words that label one axis of a tensor the figure draws: the run input ``explicit`` names when given, else
        the list the tensor's declared shape symbol for that axis takes in the report's exploration (e.g. S: the source
        words), else None (the axis is numbered). A list that does not fit the axis is not used."""
        if explicit is not None:
            return list(run.inputs[str(explicit)])
        name = run.name(ref)
        if name not in run.declared:
            return None
        words = _declared_words(run, run.declared[name].shape[axis])
        return words if words is not None and len(words) == run.cpu(ref).shape[axis] else None


def _declared_words(run: ModelRun, symbol: str) -> list[str] | None:
    """The label list a shape symbol takes in the run's report (its exploration's axis_labels), or None."""
    exploration = run.report.exploration
    if exploration is None or symbol not in exploration.axis_labels:
        return None
    return exploration.labels(run).get(exploration.axis_labels[symbol])


def _described(run: ModelRun, value: Any, kind: str) -> Any:
    """A parameter as JSON: references by the name they resolve to in this run."""
    if kind == TENSORS:
        return [run.name(ref) for ref in value]
    if value is not None and kind in (TENSOR, MODULE, PARAMETER):
        return run.name(value)
    return str(value) if kind == INPUT and value is not None else value


def visual_order(text: str) -> str:
    """Right-to-left words (Hebrew, Arabic) shaped and in visual order: both renderers lay glyphs out left to right."""
    text = str(text)
    if any("\u0590" <= ch <= "\u08ff" or "\ufb1d" <= ch <= "\ufefc" for ch in text):
        import arabic_reshaper
        from bidi import get_display

        text = get_display(arabic_reshaper.reshape(text))
    return text


def as_numpy(run: ModelRun, name: Ref | str) -> np.ndarray:
    return run.cpu(name).float().numpy()


def grid(n: int, max_cols: int = 4) -> tuple[int, int]:
    cols = min(n, max_cols)
    return math.ceil(n / cols), cols


# ----------------------------------------------------------------------------- drawings any report can use
# Heat maps, attention grids and masks are pixels: drawn with Pillow (transformer_trace.raster), milliseconds each.

LABELLED_CELLS = 24  # up to this many positions per axis, every cell is labelled; beyond, the figure keeps its size


def literal_labels(words: list[str] | None, n: int) -> list[str]:
    """Axis labels as raster text: ``words`` in visual order (no matplotlib escaping), else the positions 0…n−1."""
    if words is None:
        return [str(i) for i in range(n)]
    return [visual_order(w) for w in words][:n]


def sparse_positions(n: int, most: int = 16) -> list[int]:
    """At most ``most`` evenly spaced positions of ``n``, so long sequences stay legible."""
    return list(range(0, n, max(1, math.ceil(n / most))))


def integer_ticks(n: int, most: int = 8) -> list[int]:
    """matplotlib's default ticks on an axis of ``n`` cells: round integers from 0 to n - 1."""
    return [int(t) for t in raster.nice_ticks(0, max(n - 1, 1), most) if t == int(t) and t <= n - 1]


def _fig_px(inches: float) -> int:
    return round(inches * raster.DPI)


@dataclass(frozen=True, kw_only=True)
class Matrix(Drawing):
    tensor: Ref
    rows: InputRef | None = None
    ylabel: str | None = None
    max_cols: int = 64
    cmap: str = "viridis"
    xlabel: str = "feature"

    def draw(self, run: ModelRun, path: Path) -> None:
        data = as_numpy(run, self.tensor)
        data = data.reshape(-1, data.shape[-1])  # (rows, features)
        cols = min(self.max_cols, data.shape[1])
        data = data[:, :cols]
        rows = data.shape[0]
        # The plot area of the matplotlib figure this replaces: figure size less its margins.
        width, height = _fig_px(min(2 + cols * 0.09, 14) * 0.78 - 0.35), _fig_px(min(1.2 + rows * 0.32, 9) * 0.77 - 0.1)
        limit = raster.finite_limit(data)
        canvas = raster.Canvas()
        cmap = self.cmap
        raster.heatmap(canvas, 0, 0, data, width, height, cmap, -limit, limit, smooth=rows > height or cols > width)
        left = 0
        words = self.axis_words(run, self.rows, self.tensor, -2)
        if words is not None and rows <= 40:
            left = raster.ticks_left(canvas, 0, raster.cell_centres(0, height, rows), literal_labels(words, rows))
        else:
            ticks = integer_ticks(rows)
            left = raster.ticks_left(canvas, 0, [(t + 0.5) * height / rows for t in ticks], [str(t) for t in ticks])
        ticks = integer_ticks(cols, most=max(2, min(10, width // 60)))
        bottom = raster.ticks_below(canvas, height, [(t + 0.5) * width / cols for t in ticks], [str(t) for t in ticks])
        canvas.text(width / 2, bottom + 3, self.xlabel + f" (0–{cols - 1})", ha="center")
        if self.ylabel is not None:
            canvas.text(left - 6, height / 2, self.ylabel, ha="right", va="center", rotation=90)
        raster.colorbar(canvas, width + 30, 0, height, cmap, -limit, limit)
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class Positional(Drawing):
    tensors: tuple[Ref, ...]
    rows: InputRef | None = None  # the run input that labels the rows; None: the list the declared shape gives

    def draw(self, run: ModelRun, path: Path) -> None:
        before, after = (as_numpy(run, name)[0] for name in self.tensors)
        added = after - before
        labels = literal_labels(self.axis_words(run, self.rows, self.tensors[0], -2), added.shape[0])
        T, C = added.shape
        width, height = 400, _fig_px(min(1.6 + 0.3 * T, 9) * 0.77 - 0.2)
        canvas = raster.Canvas()
        x = 0
        for data, title in ((added, "added positional encoding"), (after, "embedding + position")):
            limit = raster.finite_limit(data)
            raster.heatmap(canvas, x, 0, data, width, height, "RdBu_r", -limit, limit, smooth=C > width or T > height)
            canvas.text(x + width / 2, -6, title, size=10, ha="center", va="bottom")
            ticks = integer_ticks(C, most=6)
            bottom = raster.ticks_below(canvas, height, [x + (t + 0.5) * width / C for t in ticks],
                                        [str(t) for t in ticks])
            canvas.text(x + width / 2, bottom + 3, "feature", ha="center")
            raster.colorbar(canvas, x + width + 16, 0, height, "RdBu_r", -limit, limit)
            x += width + 110
        shown = range(T) if T <= 40 else sparse_positions(T, most=30)
        raster.ticks_left(canvas, 0, [(i + 0.5) * height / T for i in shown], [f"{i}: {labels[i]}" for i in shown])
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class AttentionHeads(Drawing):
    tensor: Ref
    cmap: str = "viridis"
    rows: InputRef | None = None
    cols: InputRef | None = None
    annotate: bool = False

    def draw(self, run: ModelRun, path: Path) -> None:
        weights = as_numpy(run, self.tensor)[0]  # (h, rows, cols)
        heads, n_rows, n_cols = weights.shape
        grid_rows, grid_cols = grid(heads, 2 if heads <= 4 else 4)
        finite = weights[np.isfinite(weights)]
        if finite.size == 0:  # every weight NaN or infinite (a mask that blocks a whole row): cells in the bad colour
            finite = np.zeros(1)
        diverging = finite.min() < 0
        many = n_cols > 64
        # With hundreds of tokens a few large weights would wash everything else out:
        # clip the scale at the 99.5th percentile.
        top = float(np.percentile(np.abs(finite), 99.5)) if many else float(np.abs(finite).max())
        vmin, vmax = (-top, top) if diverging else (0.0, max(top, 1e-9))
        labelled = n_rows <= LABELLED_CELLS and n_cols <= LABELLED_CELLS
        cmap = self.cmap
        # Square cells, the longer side of a panel about as long as in the matplotlib grid this replaces.
        side = _fig_px((3.4 if n_cols <= 16 else 3.0) * 0.72)
        cell = side / max(n_rows, n_cols)
        if not many:
            cell = max(1, round(cell))
        width, height = round(cell * n_cols), round(cell * n_rows)
        row_labels = literal_labels(self.axis_words(run, self.rows, self.tensor, -2), n_rows) if labelled else []
        col_labels = literal_labels(self.axis_words(run, self.cols, self.tensor, -1), n_cols) if labelled else []
        x_ticks = range(n_cols) if labelled else integer_ticks(n_cols, most=5)
        y_ticks = range(n_rows) if labelled else integer_ticks(n_rows, most=5)
        label_below = [index + grid_cols >= heads for index in range(heads)]  # the lowest panel of each column
        probe = raster.Canvas()  # how far the x labels reach below a panel
        reach = raster.ticks_below(probe, 0, [0.0] * len(x_ticks),
                                   [col_labels[i] for i in x_ticks] if labelled else [str(t) for t in x_ticks],
                                   rotation=60 if labelled else 0) if x_ticks else 4
        gap_x, title_h = 34 if labelled else 44, 24
        row_gap = [title_h + (reach if any(label_below[r * grid_cols:(r + 1) * grid_cols]) else 16)
                   for r in range(grid_rows)]
        canvas = raster.Canvas()
        y = 0
        for r in range(grid_rows):
            for c in range(grid_cols):
                index = r * grid_cols + c
                if index >= heads:
                    continue
                x = c * (width + gap_x)
                raster.heatmap(canvas, x, y, weights[index], width, height, cmap, vmin, vmax, smooth=many)
                canvas.text(x + width / 2, y - 6, f"head {index + 1}", size=10, ha="center", va="bottom")
                xs = [x + (i + 0.5) * cell for i in x_ticks]
                ys = [y + (i + 0.5) * cell for i in y_ticks]
                if labelled:
                    raster.ticks_below(canvas, y + height, xs,
                                       [col_labels[i] for i in x_ticks] if label_below[index] else None, rotation=60)
                    raster.ticks_left(canvas, x, ys, [row_labels[i] for i in y_ticks] if c == 0 else [""] * len(ys))
                    if self.annotate and n_rows * n_cols <= 100:
                        for (i, j), value in np.ndenumerate(weights[index]):
                            if np.isfinite(value):
                                white = (value - vmin) < 0.6 * (vmax - vmin)
                                canvas.text(x + (j + 0.5) * cell, y + (i + 0.5) * cell, f"{value:.2f}", size=6.5,
                                            ha="center", va="center",
                                            color=(255, 255, 255) if white else (0, 0, 0))
                else:
                    raster.ticks_below(canvas, y + height, xs,
                                       [str(t) for t in x_ticks] if label_below[index] else None)
                    raster.ticks_left(canvas, x, ys, [str(t) for t in y_ticks] if c == 0 else [""] * len(ys))
            y += height + row_gap[r]
        left, _, right, bottom = canvas.bounds()
        total_h = y - row_gap[-1]
        canvas.text((left + right) / 2, bottom + 6, "key: the token attended to", size=10.8, ha="center")
        canvas.text(left - 10, total_h / 2, "query: the token attending", size=10.8, ha="right", va="center",
                    rotation=90)
        bar_h = max(150, min(round(total_h * 0.6), 520))
        raster.colorbar(canvas, right + 30, round((total_h - bar_h) / 2), bar_h, cmap, vmin, vmax)
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class Mask(Drawing):
    """A causal mask in any convention the causal-mask check reads (``mask_allows``): additive (0 allowed, −inf or
    ≤ −1e9 blocked) or boolean (True allowed, or True blocked)."""

    tensor: Ref
    rows: InputRef | None = None  # the run input that labels the rows; None: the list the declared shape gives

    def draw(self, run: ModelRun, path: Path) -> None:
        m = run.cpu(self.tensor)[0, 0]  # (T, T)
        boolean = m.dtype == torch.bool
        blocked = ~mask_allows(m)[0].numpy()
        T = blocked.shape[0]
        labels = literal_labels(self.axis_words(run, self.rows, self.tensor, -2), T)
        side = _fig_px(min(1.5 + 0.55 * min(T, LABELLED_CELLS), 1.2 + 0.5 * min(T, LABELLED_CELLS)) * 0.8 - 0.4)
        cell = max(1, round(side / T)) if T <= LABELLED_CELLS else side / T
        size = round(cell * T)
        canvas = raster.Canvas()
        grey = np.array([[255, 255, 255], [0x9E, 0x9E, 0x9E]], dtype=np.uint8)
        canvas.image(0, 0, grey[raster.resample(blocked.astype(np.intp), size, size, smooth=False)])
        canvas.rect(-1, -1, size, size)
        allowed_text, blocked_text = ("✓", "") if boolean else ("0", "−∞")
        if T <= LABELLED_CELLS:
            for (i, j), is_blocked in np.ndenumerate(blocked):
                canvas.text((j + 0.5) * cell, (i + 0.5) * cell, blocked_text if is_blocked else allowed_text,
                            ha="center", va="center")
            shown = list(range(T))
        else:  # hundreds of positions: the triangle itself is the message
            shown = sparse_positions(T)
        centres = [(i + 0.5) * cell for i in shown]
        texts = [f"{i}: {labels[i]}" for i in shown]
        bottom = raster.ticks_below(canvas, size, centres, texts, rotation=60)
        left = raster.ticks_left(canvas, 0, centres, texts)
        canvas.text(size / 2, -6,
                    f"{int((~blocked).sum())} allowed (white), {int(blocked.sum())} blocked (grey) of {T}×{T}",
                    size=10, ha="center", va="bottom")
        canvas.text(size / 2, bottom + 3, "key position: may it be read?", ha="center")
        canvas.text(left - 6, size / 2, "query position", ha="right", va="center", rotation=90)
        canvas.save(path)


DRAWINGS: Registry[type[Drawing]] = Registry("drawing",
                                             [(cls.key(), cls) for cls in (Matrix, Positional, AttentionHeads, Mask)])
"""The generic drawings, any report may use them; a report's own are in its figures.py ``DRAWINGS``."""
