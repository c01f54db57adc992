"""Pixel figures (heat maps, attention grids, masks) drawn straight with Pillow.

A heat map is a colour-mapped array: looking each value up in the colour map's table and writing
the pixels costs milliseconds, where a matplotlib figure costs a few hundred (and its import a
second). The look follows the matplotlib figures of transformer_trace.figures: the same colour maps
(their 256-entry tables copied to generator/colormaps/, tests/test_figures.py compares them with
matplotlib's), the same value-to-colour mapping, DejaVu Sans (the font matplotlib ships, loaded
from its folder without importing it), the same 110 dpi, so a figure reads the same on screen,
in print and in the PDF.

Coordinates are pixels, y down. A :class:`Canvas` collects what is drawn at any coordinates,
negative included, and writes the picture cropped to its content with a margin (matplotlib's
``bbox_inches="tight"``).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

# The figures' API is this module's: colour and text come from their own modules.
from transformer_trace.raster_colour import (COLORMAPS, colorize, colormap, finite_limit, resample,  # noqa: F401
                                     usable_range)
from transformer_trace.raster_text import DPI, PX_PER_PT, multiline_mask, text_mask, text_width  # noqa: F401

MARGIN = 11  # pixels around the content, as savefig's pad_inches=0.1 at 110 dpi
TEXT = (0, 0, 0)
MINUS = "\u2212"  # matplotlib's axis labels write negative numbers with a real minus sign


# ----------------------------------------------------------------------------- ticks


def nice_ticks(low: float, high: float, most: int = 8) -> list[float]:
    """Round tick values inside [low, high], at most ``most``, on steps of 1, 2, 2.5 or 5 × 10^k (as matplotlib's)."""
    if not high > low:
        return [low]
    raw = (high - low) / max(most - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(s * power for s in (1, 2, 2.5, 5, 10) if s * power >= raw * (1 - 1e-9))
    first = math.ceil(low / step - 1e-9)
    ticks = [k * step for k in range(first, math.floor(high / step + 1e-9) + 1)]
    return [0.0 if abs(t) < step * 1e-9 else t for t in ticks]


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """Same number of decimals for every tick, enough to tell them apart; a minus sign, not a hyphen."""
    step = min((abs(b - a) for a, b in zip(ticks, ticks[1:])), default=1.0) or 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    if any(abs(round(t * 10**decimals) - t * 10**decimals) > 1e-6 for t in ticks):
        decimals += 1  # steps of 2.5 × 10^k
    return [f"{t:.{decimals}f}".replace("-", MINUS) for t in ticks]


# ----------------------------------------------------------------------------- canvas


_Draw = Callable[[Image.Image, int, int], object]  # draws one shape on a picture, offset by (dx, dy)


class Canvas:
    """Draw at any pixel coordinates; ``save`` crops to what was drawn plus a margin."""

    def __init__(self) -> None:
        self._ops: list[tuple[tuple[int, int, int, int], _Draw]] = []

    def _add(self, box: tuple[int, int, int, int], op: _Draw) -> tuple[int, int, int, int]:
        self._ops.append((box, op))
        return box

    def image(self, x: int, y: int, pixels: np.ndarray | Image.Image) -> tuple[int, int, int, int]:
        picture = (pixels if isinstance(pixels, Image.Image)
                   else Image.fromarray(np.ascontiguousarray(pixels), mode="RGB"))
        return self._add((x, y, x + picture.width, y + picture.height),
                         lambda im, dx, dy: im.paste(picture, (x + dx, y + dy)))

    def rect(self, x0: int, y0: int, x1: int, y1: int, outline=TEXT, fill=None,
             width: int = 1) -> tuple[int, int, int, int]:
        """The box with corners (x0, y0) and (x1, y1), both included."""
        return self._add((x0, y0, x1 + 1, y1 + 1), lambda im, dx, dy: ImageDraw.Draw(im).rectangle(
            (x0 + dx, y0 + dy, x1 + dx, y1 + dy), outline=outline, fill=fill, width=width))

    def line(self, x0: int, y0: int, x1: int, y1: int, fill=TEXT, width: int = 1) -> tuple[int, int, int, int]:
        box = (min(x0, x1), min(y0, y1), max(x0, x1) + 1, max(y0, y1) + 1)
        return self._add(box, lambda im, dx, dy: ImageDraw.Draw(im).line(
            (x0 + dx, y0 + dy, x1 + dx, y1 + dy), fill=fill, width=width))

    def text(self, x: float, y: float, text: str, size: float = 9, ha: str = "left", va: str = "top",
             rotation: float = 0, color=TEXT) -> tuple[int, int, int, int]:
        """``text`` at (x, y): ``ha``/``va`` align the (rotated) text's box to that point, as matplotlib's default
        rotation mode."""
        mask = multiline_mask(text, size)
        if rotation:
            mask = mask.rotate(rotation, resample=Image.Resampling.BICUBIC, expand=True)
        left = round(x - {"left": 0, "center": mask.width / 2, "right": mask.width}[ha])
        top = round(y - {"top": 0, "center": mask.height / 2, "bottom": mask.height}[va])
        return self._add((left, top, left + mask.width, top + mask.height),
                         lambda im, dx, dy: im.paste(
                             color, (left + dx, top + dy, left + dx + mask.width, top + dy + mask.height), mask))

    def bounds(self) -> tuple[int, int, int, int]:
        boxes = [box for box, _ in self._ops]
        return min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)

    def save(self, path: Path) -> None:
        x0, y0, x1, y1 = self.bounds()
        picture = Image.new("RGB", (x1 - x0 + 2 * MARGIN, y1 - y0 + 2 * MARGIN), (255, 255, 255))
        for _, op in self._ops:
            op(picture, MARGIN - x0, MARGIN - y0)
        write_png(picture, path)


def write_png(picture: Image.Image, path: Path) -> None:
    """A 256-colour palette PNG without metadata, as transformer_trace.figures.save writes: the same bytes for the same
    picture."""
    picture = picture.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", compress_level=6)  # zlib 6: a tenth more bytes than 9, five times faster
    Path(path).write_bytes(buffer.getvalue())


# ----------------------------------------------------------------------------- heat-map axes


def colorbar(canvas: Canvas, x: int, y: int, height: int, cmap: str, vmin: float, vmax: float, width: int = 14,
             alpha: float = 1.0) -> None:
    """A vertical colour bar, low at the bottom, its ticks and labels on the right (``alpha``: its colours over
    white)."""
    vmin, vmax = usable_range(vmin, vmax)
    values = np.linspace(vmax, vmin, height)[:, None].repeat(width, axis=1)  # (height, width), top = vmax
    colours = colorize(values, cmap, vmin, vmax)
    if alpha < 1:
        colours = (alpha * colours + (1 - alpha) * 255).round().astype(np.uint8)
    canvas.image(x, y, colours)
    canvas.rect(x, y, x + width, y + height, width=1)
    ticks = nice_ticks(vmin, vmax, most=max(2, min(8, height // 30)))
    for value, label in zip(ticks, tick_labels(ticks)):
        ty = round(y + (vmax - value) / ((vmax - vmin) or 1.0) * height)
        canvas.line(x + width, ty, x + width + 4, ty)
        canvas.text(x + width + 7, ty, label, size=9, va="center")


def heatmap(canvas: Canvas, x: int, y: int, data: np.ndarray, width: int, height: int, cmap: str, vmin: float,
            vmax: float,             smooth: bool = False) -> tuple[int, int, int, int]:
    """``data`` (rows, cols) drawn into the box at (x, y) of ``width`` × ``height`` pixels, framed; returns the box.
    An empty ``data`` is drawn as one cell of the "bad" colour; a box under a pixel is one pixel."""
    width, height = max(1, round(width)), max(1, round(height))
    if data.size == 0:
        data = np.full((1, 1), np.nan)
    if smooth and (data.shape[0] > height or data.shape[1] > width):
        colours = colorize(resample(data, height, width, True), cmap, vmin, vmax)
    else:  # the nearest cell's colour: colouring the cells first gives the same pixels from far fewer values
        colours = resample(colorize(data, cmap, vmin, vmax), height, width, False)
    canvas.image(x, y, colours)
    canvas.rect(x - 1, y - 1, x + width, y + height)
    return x, y, x + width, y + height


def cell_centres(start: int, length: int, n: int) -> list[float]:
    """Pixel centres of ``n`` equal cells across ``length`` pixels from ``start``."""
    return [start + (i + 0.5) * length / n for i in range(n)]


def ticks_left(canvas: Canvas, x: int, centres: Sequence[float], labels: Sequence[str], size: float = 9) -> int:
    """Tick marks left of x and their labels, right-aligned; returns the left edge of the widest label."""
    left = x
    for cy, label in zip(centres, labels):
        canvas.line(x - 4, round(cy), x - 1, round(cy))
        box = canvas.text(x - 7, cy, label, size=size, ha="right", va="center")
        left = min(left, box[0])
    return left


def ticks_below(canvas: Canvas, y: int, centres: Sequence[float], labels: Sequence[str] | None, size: float = 9,
                rotation: float = 0) -> int:
    """Tick marks below y and (unless ``labels`` is None) their labels; rotated labels end at their tick. Returns the
    bottom."""
    bottom = y + 4
    for i, cx in enumerate(centres):
        canvas.line(round(cx), y + 1, round(cx), y + 4)
        if labels is not None:
            box = canvas.text(cx, y + 7, labels[i], size=size, ha="right" if rotation else "center", rotation=rotation)
            bottom = max(bottom, box[3])
    return bottom


def overlay(image: np.ndarray, heat: np.ndarray, cmap: str, alpha: float, size: int) -> Image.Image:
    """``heat`` (same height and width as the RGB ``image`` in [0, 1]) colour-mapped over its own range and laid over
    the image with opacity ``alpha`` (matplotlib's imshow(image); imshow(heat, alpha=...)), scaled to ``size`` pixels
    wide."""
    finite = heat[np.isfinite(heat)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    mixed = alpha * colorize(heat, cmap, low, high) + (1 - alpha) * 255 * image
    return fit(mixed.round().astype(np.uint8), size)


def fit(pixels: np.ndarray, width: int) -> Image.Image:
    """An RGB array (uint8 or floats in [0, 1]) scaled to ``width`` pixels wide, the aspect kept (averaged when
    shrinking)."""
    if pixels.dtype != np.uint8:
        pixels = (np.clip(pixels, 0, 1) * 255).round().astype(np.uint8)
    picture = Image.fromarray(np.ascontiguousarray(pixels), mode="RGB")
    height = max(1, round(picture.height * width / picture.width))
    return picture.resize((width, height), Image.Resampling.BILINEAR if width > picture.width else Image.Resampling.BOX)


# ----------------------------------------------------------------------------- tables and bars


def table(canvas: Canvas, x: int, y: int, header: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]],
          size: float = 9,           pad: int = 6, row_height: int = 26) -> tuple[int, int, int, int]:
    """A ruled table: ``header`` over the columns, each row a label and its cells, text centred; returns its box."""
    columns = [[header[j], *(cells[j] for _, cells in rows)] for j in range(len(header))]
    widths = [max(text_width(text, size) for text in column) + 2 * pad for column in columns]
    label_width = max(text_width(label, size) for label, _ in rows) + 2 * pad
    right = x + label_width + sum(widths)
    for r, (label, cells) in enumerate([("", list(header)), *rows]):
        top = y + r * row_height
        if r:
            canvas.rect(x, top, x + label_width, top + row_height)
            canvas.text(x + pad, top + row_height / 2, label, size=size, va="center")
        left = x + label_width
        for width, text in zip(widths, cells):
            canvas.rect(left, top, left + width, top + row_height)
            canvas.text(left + width / 2, top + row_height / 2, text, size=size, ha="center", va="center")
            left += width
    return x, y, right, y + (len(rows) + 1) * row_height


def hbars(canvas: Canvas, x: int, y: int, width: int, values: Sequence[float], labels: Sequence[str], colours: Sequence,
          xmax: float, pitch: int = 30, size: float = 9) -> tuple[int, int, int, int]:
    """Horizontal bars, the first on top, in a framed plot ``width`` wide from 0 to ``xmax``, with value ticks below."""
    height = pitch * len(values)
    for i, (value, colour) in enumerate(zip(values, colours)):
        top = y + round((i + 0.1) * pitch)
        length = round(min(max(value, 0.0), xmax) / xmax * width)
        if length > 0:
            canvas.rect(x, top, x + length - 1, top + round(0.8 * pitch) - 1, outline=colour, fill=colour)
    canvas.rect(x - 1, y - 1, x + width, y + height)
    ticks_left(canvas, x, [y + (i + 0.5) * pitch for i in range(len(values))], labels, size=size)
    ticks = nice_ticks(0, xmax, max(3, min(8, width // 45)))
    bottom = ticks_below(canvas, y + height, [x + t / xmax * width for t in ticks], tick_labels(ticks), size=size)
    return x, y, x + width, bottom


# ------------------------------------------------------------------- charts: axes of numbers, lines, markers, legends
# The look of matplotlib's defaults at 110 dpi, as the GPT's charts had it: line widths and marker sizes in points,
# dashes and dots in matplotlib's patterns, ticks on round numbers, legends with their paddings in units of the font
# size.

SUPERSAMPLE = 4  # shapes drawn this many times larger and averaged down: antialiased edges, as matplotlib's Agg
DASHED = (3.7, 1.6)  # matplotlib's dash patterns, in multiples of the line width
DOTTED = (1.0, 1.65)


def _rgba(colour) -> tuple[int, int, int, int]:
    if isinstance(colour, str):
        colour = colour.lstrip("#")
        return int(colour[0:2], 16), int(colour[2:4], 16), int(colour[4:6], 16), 255
    return (*colour[:3], colour[3] if len(colour) > 3 else 255)


def _dashes(points: Sequence[tuple[float, float]], pattern: Sequence[float]) -> list[list[tuple[float, float]]]:
    """The polyline cut into its visible pieces (``pattern``: on, off lengths in pixels), as a dashed line is drawn."""
    pieces, current, on, left, phase = [], [points[0]], True, pattern[0], 0
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        length, done = math.hypot(x1 - x0, y1 - y0), 0.0
        while length - done > left:
            done += left
            cut = (x0 + (x1 - x0) * done / length, y0 + (y1 - y0) * done / length)
            if on:
                pieces.append(current + [cut])
            current, on = [cut], not on
            phase = (phase + 1) % len(pattern)
            left = pattern[phase]
        left -= length - done
        current.append((x1, y1))
    if on and len(current) > 1:
        pieces.append(current)
    return pieces


class Layer:
    """Antialiased shapes over the box (x0, y0)–(x1, y1) of a canvas, clipped to it; coordinates are canvas pixels
    (floats).

    The layer takes its place among the canvas's drawings when it is created: what is drawn on the canvas afterwards
    (text, a frame) lies on top of it."""

    def __init__(self, canvas: Canvas, x0: int, y0: int, x1: int, y1: int) -> None:
        self.x0, self.y0, self.x1, self.y1 = x0, y0, x1, y1
        self._shapes: list = []
        canvas._add((x0, y0, x1, y1), self._paste)

    def line(self, points: Sequence[tuple[float, float]], colour, width_pt: float = 1.5,
             pattern: Sequence[float] | None = None) -> None:
        """A polyline ``width_pt`` points wide; ``pattern`` (e.g. DASHED) in multiples of the width."""
        width = width_pt * PX_PER_PT
        pieces = _dashes(points, [p * width for p in pattern]) if pattern else [list(points)]
        self._shapes += [("line", piece, _rgba(colour), width) for piece in pieces]

    def rect(self, x0: float, y0: float, x1: float, y1: float, fill, edge=None, edge_pt: float = 0.0) -> None:
        self._shapes.append(("rect", (x0, y0, x1, y1), _rgba(fill) if fill is not None else None,
                             _rgba(edge) if edge is not None else None, edge_pt * PX_PER_PT))

    def rounded(self, x0: float, y0: float, x1: float, y1: float, radius: float, fill, edge) -> None:
        self._shapes.append(("rounded", (x0, y0, x1, y1), radius, _rgba(fill), _rgba(edge)))

    def marker(self, x: float, y: float, shape: str, size_pt: float, colour) -> None:
        """matplotlib's "o" (a disc) or "*" (a five-pointed star), ``size_pt`` across, with its 1-point edge in the
        same colour."""
        self._shapes.append(("marker", (x, y), shape, size_pt * PX_PER_PT / 2, _rgba(colour)))

    def _render(self, below: Image.Image) -> Image.Image:
        """The shapes drawn over ``below`` (what the canvas holds under the box): at SUPERSAMPLE × the size over its
        enlarged pixels, then averaged down, so edges blend with what is really beneath and untouched pixels come back
        unchanged."""
        s = SUPERSAMPLE
        width, height = self.x1 - self.x0, self.y1 - self.y0
        big = below.resize((width * s, height * s), Image.Resampling.NEAREST)
        draw = ImageDraw.Draw(big, "RGBA")  # colours with alpha (the legend's box) blend with what is beneath

        def at(x: float, y: float) -> tuple[float, float]:
            return (x - self.x0) * s, (y - self.y0) * s

        edge_px = PX_PER_PT * s  # the 1-point edge of markers
        for shape in self._shapes:
            kind = shape[0]
            if kind == "line":
                _, points, colour, width_px = shape
                draw.line([at(*p) for p in points], fill=colour, width=max(1, round(width_px * s)),
                          joint="curve" if len(points) > 2 else None)
            elif kind == "rect":
                _, (x0, y0, x1, y1), fill, edge, edge_w = shape
                (a, b), (c, d) = at(x0, y0), at(x1, y1)
                box = (round(min(a, c)), round(min(b, d)), round(max(a, c)) - 1, round(max(b, d)) - 1)
                if box[2] < box[0] or box[3] < box[1]:
                    continue
                if fill is not None:
                    draw.rectangle(box, fill=fill)
                if edge is not None and edge_w > 0:  # centred on the outline, as matplotlib strokes it
                    half = edge_w * s / 2
                    grown = (round(box[0] - half), round(box[1] - half), round(box[2] + half), round(box[3] + half))
                    draw.rectangle(grown, outline=edge, width=max(1, round(edge_w * s)))
            elif kind == "rounded":
                _, (x0, y0, x1, y1), radius, fill, edge = shape
                (a, b), (c, d) = at(x0, y0), at(x1, y1)
                draw.rounded_rectangle((a, b, c, d), radius=radius * s, fill=fill, outline=edge, width=s)
            else:
                _, (x, y), form, radius, colour = shape
                cx, cy = at(x, y)
                r = radius * s + edge_px / 2
                if form == "o":
                    draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour)
                else:  # matplotlib's star: inner radius 0.381966 of the outer, a point upwards
                    inner = r * 0.381966
                    points = [(cx + (r if k % 2 == 0 else inner) * math.sin(math.pi * k / 5),
                               cy - (r if k % 2 == 0 else inner) * math.cos(math.pi * k / 5)) for k in range(10)]
                    draw.polygon(points, fill=colour)
        return big.reduce(s)

    def _paste(self, im: Image.Image, dx: int, dy: int) -> None:
        x, y = self.x0 + dx, self.y0 + dy
        im.paste(self._render(im.crop((x, y, x + self.x1 - self.x0, y + self.y1 - self.y0))), (x, y))


def axis_ticks(low: float, high: float, length_px: float, vertical: bool, size: float = 9) -> list[float]:
    """Round ticks inside [low, high], as many as matplotlib's AutoLocator puts on an axis this long (at most 10)."""
    # matplotlib's tick space: label size × 2 (y) or × 3 (x)
    space = length_px / PX_PER_PT / (size * (2 if vertical else 3))
    return nice_ticks(low, high, max(1, min(9, int(space))) + 1)


class Axes:
    """A framed plot at (x, y), ``width`` × ``height`` pixels, showing ``xlim`` × ``ylim`` (y up); its shapes are
    clipped to the frame."""

    def __init__(self, canvas: Canvas, x: int, y: int, width: int, height: int, xlim: tuple[float, float],
                 ylim: tuple[float, float]) -> None:
        self.canvas, self.x, self.y, self.width, self.height = canvas, x, y, width, height
        self.xlim, self.ylim = xlim, ylim
        self.layer = Layer(canvas, x, y, x + width, y + height)
        canvas.rect(x - 1, y - 1, x + width, y + height)  # the frame, over the data

    def px(self, value: float) -> float:
        low, high = self.xlim
        return self.x + (value - low) / ((high - low) or 1.0) * self.width

    def py(self, value: float, ylim: tuple[float, float] | None = None) -> float:
        low, high = ylim or self.ylim
        return self.y + self.height - (value - low) / ((high - low) or 1.0) * self.height

    def bar(self, centre: float, value: float, width: float, colour, edge=None, edge_pt: float = 0.0) -> None:
        self.layer.rect(self.px(centre - width / 2), self.py(value), self.px(centre + width / 2), self.py(0.0), colour,
                        edge, edge_pt)

    def line(self, xs: Iterable[float], ys: Iterable[float], colour, width_pt: float = 1.5, pattern=None,
             ylim=None) -> None:
        self.layer.line([(self.px(x), self.py(y, ylim)) for x, y in zip(xs, ys)], colour, width_pt, pattern)

    def hline(self, value: float, colour, width_pt: float = 1.0, pattern=None, ylim=None) -> None:
        y = self.py(value, ylim)
        self.layer.line([(self.x - 2, y), (self.x + self.width + 2, y)], colour, width_pt, pattern)

    def markers(self, xs: Iterable[float], ys: Iterable[float], shape: str, size_pt: float, colour, ylim=None) -> None:
        for x, y in zip(xs, ys):
            self.layer.marker(self.px(x), self.py(y, ylim), shape, size_pt, colour)

    def xticks(self, values: Sequence[float], labels: Sequence[str], size: float = 9) -> int:
        """Ticks and labels below; returns the bottom of the labels."""
        return ticks_below(self.canvas, self.y + self.height, [self.px(v) for v in values], labels, size=size)

    def yticks(self, values: Sequence[float], labels: Sequence[str], ylim=None) -> int:
        """Ticks and labels on the left; returns the left edge of the labels."""
        return ticks_left(self.canvas, self.x, [self.py(v, ylim) for v in values], labels)

    def yticks_right(self, values: Sequence[float], labels: Sequence[str], ylim=None) -> int:
        """Ticks and labels on the right (a second y axis); returns the right edge of the labels."""
        right, edge = self.x + self.width, self.x + self.width
        for value, label in zip(values, labels):
            cy = round(self.py(value, ylim))
            self.canvas.line(edge + 1, cy, edge + 4, cy)
            right = max(right, self.canvas.text(edge + 7, cy, label, va="center")[2])
        return right

    def title(self, text: str, size: float = 10) -> None:
        # 6 points above
        self.canvas.text(self.x + self.width / 2, self.y - 9, text, size=size, ha="center", va="bottom")


def legend(canvas: Canvas, entries: Sequence[tuple], x: float, y: float, corner: str = "upper right", size: float = 7,
           ncol: int = 1, frame: bool = True) -> tuple[int, int, int, int]:
    """matplotlib's legend with its corner ``corner`` at (x, y): entries ("line", colour, width_pt, pattern, label),
    ("marker", shape, size_pt, colour, label) or ("patch", colour, label), filled column by column."""
    em = size * PX_PER_PT
    rows = math.ceil(len(entries) / ncol)
    columns = [entries[c * rows:(c + 1) * rows] for c in range(ncol)]
    columns = [column for column in columns if column]
    text_h = text_mask("Hg", size).height
    pitch = text_h + 0.5 * em  # labelspacing
    handle, pad, gap, border = 2.0 * em, 0.8 * em, 2.0 * em, 0.4 * em
    widths = [handle + pad + max(text_width(entry[-1], size) for entry in column) for column in columns]
    box_w = sum(widths) + gap * (len(columns) - 1) + 2 * border
    box_h = rows * text_h + (rows - 1) * 0.5 * em + 2 * border
    left = x - box_w if corner.endswith("right") else x
    top = y if corner.startswith("upper") else y - box_h
    x0, y0, x1, y1 = math.floor(left), math.floor(top), math.ceil(left + box_w) + 1, math.ceil(top + box_h) + 1
    layer = Layer(canvas, x0, y0, x1, y1)
    if frame:  # white at 80% opacity over the data, a light grey edge, rounded corners
        layer.rounded(left, top, left + box_w, top + box_h, 0.2 * em, (255, 255, 255, 204), (0xCC, 0xCC, 0xCC))
    cx = left + border
    for column, width in zip(columns, widths):
        for r, entry in enumerate(column):
            mid = top + border + r * pitch + text_h / 2
            kind = entry[0]
            if kind == "line":
                _, colour, width_pt, pattern, _ = entry
                layer.line([(cx, mid), (cx + handle, mid)], colour, width_pt, pattern)
            elif kind == "marker":
                _, shape, size_pt, colour, _ = entry
                layer.marker(cx + handle / 2, mid, shape, size_pt, colour)
            else:
                layer.rect(cx, mid - 0.35 * em, cx + handle, mid + 0.35 * em, entry[1])
            canvas.text(cx + handle + pad, mid, entry[-1], size=size, va="center")
        cx += width + gap
    return x0, y0, x1, y1
