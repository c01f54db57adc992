"""Text for the pixel figures (generator/raster.py): DejaVu Sans, the font matplotlib ships (loaded from its folder
without importing it), with installed CJK and emoji fonts as fallbacks, rendered as coverage masks at the figures'
110 dpi."""

from __future__ import annotations

import functools
import importlib.util
import math
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

DPI = 110
PX_PER_PT = DPI / 72


# ----------------------------------------------------------------------------- fonts


@functools.cache
def _font_files() -> tuple[Path, ...]:
    """DejaVu Sans from matplotlib's own folder (always there), then installed CJK and emoji fonts as fallbacks."""
    spec = importlib.util.find_spec("matplotlib")  # finds the folder without running matplotlib's import
    if spec is None or not spec.submodule_search_locations:  # a dependency: only a broken install lacks it
        raise ImportError("matplotlib is not installed: its DejaVu Sans font draws the figures' text")
    files = [Path(spec.submodule_search_locations[0]) / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"]
    for pattern in ("**/NotoSansCJK-Regular.ttc", "**/Symbola*.ttf"):  # the fallbacks transformer_trace.figures uses
        files += sorted(Path("/usr/share/fonts").glob(pattern))[:1]
    return tuple(files)


@functools.cache
def _font(index: int, pixels: int) -> ImageFont.FreeTypeFont:
    path = _font_files()[index]
    face = 2 if path.suffix == ".ttc" else 0  # Noto Sans CJK's collection: face 2 is SC, matplotlib's choice
    return ImageFont.truetype(str(path), pixels, index=face, layout_engine=ImageFont.Layout.BASIC)


@functools.cache
def _covers(index: int, char: str) -> bool:
    if index == 0 and ord(char) < 0x250:  # DejaVu has every Latin letter; beyond, its character map is read
        return True
    return ord(char) in _cmap(index)


@functools.cache
def _cmap(index: int) -> frozenset[int]:
    from fontTools.ttLib import TTCollection, TTFont  # matplotlib's own dependency; read only for rare glyphs

    path = _font_files()[index]
    font = TTCollection(str(path), lazy=True).fonts[2] if path.suffix == ".ttc" else TTFont(str(path), lazy=True)
    return frozenset(font.getBestCmap())


def _runs(text: str) -> list[tuple[int, str]]:
    """``text`` cut into runs of one font each: the first font, in fallback order, that has the glyph."""
    if all(ord(char) < 0x250 for char in text):  # Latin: DejaVu, without looking at the fallbacks
        return [(0, text)] if text else []
    runs: list[tuple[int, str]] = []
    for char in text:
        index = next((i for i in range(len(_font_files())) if _covers(i, char)), 0)  # none: DejaVu's box
        if runs and runs[-1][0] == index:
            runs[-1] = (index, runs[-1][1] + char)
        else:
            runs.append((index, char))
    return runs


@functools.lru_cache(maxsize=4096)
def text_mask(text: str, size_pt: float) -> Image.Image:
    """``text`` (already in visual order, see transformer_trace.figures.plain) as an 8-bit coverage mask, baseline
    shared by every font.

    Kept per (text, size): tick labels, mask cells and annotations repeat; a mask is only ever read, never drawn on."""
    pixels = round(size_pt * PX_PER_PT)
    runs = [(_font(i, pixels), part) for i, part in _runs(text)] or [(_font(0, pixels), "")]
    ascent = max(font.getmetrics()[0] for font, _ in runs)
    descent = max(font.getmetrics()[1] for font, _ in runs)
    width = math.ceil(sum(font.getlength(part) for font, part in runs))
    mask = Image.new("L", (max(width, 1), ascent + descent))
    draw = ImageDraw.Draw(mask)
    x = 0.0
    for font, part in runs:
        draw.text((x, ascent), part, font=font, fill=255, anchor="ls")
        x += font.getlength(part)
    return mask


def multiline_mask(text: str, size_pt: float) -> Image.Image:
    """Lines stacked, each centred (matplotlib's multi-line titles)."""
    lines = [text_mask(line, size_pt) for line in text.split("\n")]
    if len(lines) == 1:
        return lines[0]
    mask = Image.new("L", (max(line.width for line in lines), sum(line.height for line in lines)))
    y = 0
    for line in lines:
        mask.paste(line, ((mask.width - line.width) // 2, y))
        y += line.height
    return mask


def text_width(text: str, size_pt: float) -> int:
    return text_mask(text, size_pt).width
