"""Figures specific to the toy ViT report, listed in ``DRAWINGS``; all drawn with Pillow (transformer_trace.raster), no
matplotlib.

Every number the seed printed that a figure shows comes from the run's ``seed_table`` input (seed.py's comparison,
made from seed_004.csv and the run's own tensors), never from this file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from transformer_trace import raster
from transformer_trace.figures import Drawing
from transformer_trace.registry import Registry
from transformer_trace.run import ModelRun
from transformer_trace.sources import Ref

VERDICT_COLOURS = {"agrees": (0x43, 0xA0, 0x47), "slip": (0xE5, 0x39, 0x35), "carried": (0xFB, 0x8C, 0x00),
                   "method": (0x1E, 0x88, 0xE5)}
VERDICT_WORDS = {"agrees": "agrees", "slip": "seed's arithmetic slip", "carried": "seed carries an earlier difference",
                 "method": "seed computes it differently"}


def _grey(value: float) -> tuple[int, int, int]:
    level = round(255 * min(max(value, 0.0), 1.0))
    return level, level, level


@dataclass(frozen=True, kw_only=True)
class PatchGrid(Drawing):
    """The image pixel by pixel, each intensity written in its square, the 2×2 patches outlined and named A–I."""

    uses = ("patches",)
    tensor: Ref

    def draw(self, run: ModelRun, path: Path) -> None:
        image = run.cpu(self.tensor)[0, 0].float().numpy()  # (1, 1, H, W) -> (H, W)
        H, W = image.shape
        P, cell = run.dims["P"], 64
        canvas = raster.Canvas()
        for (y, x), value in np.ndenumerate(image):
            canvas.rect(x * cell, y * cell, (x + 1) * cell - 1, (y + 1) * cell - 1, outline=(200, 200, 200),
                        fill=_grey(value))
            canvas.text((x + 0.5) * cell, (y + 0.62) * cell, f"{value:.1f}", size=11, ha="center", va="center",
                        color=(0, 0, 0) if value > 0.45 else (255, 255, 255))
        side = W // P
        for k, name in enumerate(run.inputs["patches"]):
            r, c = divmod(k, side)
            canvas.rect(c * P * cell, r * P * cell, (c + 1) * P * cell - 1, (r + 1) * P * cell - 1,
                        outline=(229, 57, 53), width=3)
            canvas.rect(c * P * cell + 3, r * P * cell + 3, c * P * cell + 25, r * P * cell + 25, outline=(229, 57, 53),
                        fill=(229, 57, 53))
            canvas.text(c * P * cell + 14, r * P * cell + 14, name, size=11, ha="center", va="center",
                        color=(255, 255, 255))
        canvas.text(W * cell / 2, -8, f"{H}×{W} image, {side}×{side} patches of {P}×{P} (0 = black, 1 = white)",
                    size=10,
                    ha="center", va="bottom")
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class QueryOverGrid(Drawing):
    """One query's row of an attention tensor (raw scores or weights) laid out on the patch grid, [CLS] beside it,
    each cell with this run's value and, where the seed printed one, the seed's."""

    uses = ("tokens", "query", "seed_table")
    tensor: Ref
    entry: str  # the seed_table entry printed for this row
    what: str

    def draw(self, run: ModelRun, path: Path) -> None:
        q = run.inputs["query"]
        row = run.cpu(self.tensor)[0, 0, q].float().numpy()  # (h, N1, N1) -> the query's row over the N1 keys
        tokens = run.inputs["tokens"]
        seed_rows = {r["item"]: r for r in run.inputs["seed_table"].get(self.entry, {}).get("rows", [])}
        side = round((len(row) - 1) ** 0.5)
        low, high = float(row.min()), float(row.max())
        cell = 120
        canvas = raster.Canvas()

        def box(x: int, y: int, k: int) -> None:
            colour = tuple(int(v) for v in raster.colorize(np.array([[row[k]]]), "viridis", low, high or 1.0)[0, 0])
            canvas.rect(x, y, x + cell - 1, y + cell - 1, outline=(255, 255, 255), fill=colour)
            light = sum(colour) > 380
            ink = (0, 0, 0) if light else (255, 255, 255)
            canvas.text(x + cell / 2, y + 18, tokens[k], size=12, ha="center", va="center", color=ink)
            canvas.text(x + cell / 2, y + 52, f"run {row[k]:.4f}", size=10, ha="center", va="center", color=ink)
            printed = seed_rows.get(f"{tokens[q]}·{tokens[k]}") or seed_rows.get(f"{tokens[q]}→{tokens[k]}")
            if printed:
                canvas.text(x + cell / 2, y + 78, f"seed {printed['printed'][0]}", size=10, ha="center", va="center",
                            color=ink)
                mark = VERDICT_COLOURS[printed["verdict"]]
                canvas.rect(x + cell - 22, y + 6, x + cell - 8, y + 20, outline=(255, 255, 255), fill=mark)
            if k == q:
                canvas.rect(x + 2, y + 2, x + cell - 3, y + cell - 3, outline=(229, 57, 53), width=3)

        box(0, 0, 0)  # [CLS] has no patch: its own square left of the grid
        for k in range(1, len(row)):
            r, c = divmod(k - 1, side)
            box(cell + 30 + c * cell, r * cell, k)
        canvas.text(cell + 30 + side * cell / 2, -8,
                    f"{self.what} of query {tokens[q]} (outlined) over [CLS] and the patch grid",
                    size=10, ha="center", va="bottom")
        y = side * cell + 14
        for verdict, colour in VERDICT_COLOURS.items():
            canvas.rect(cell + 30, y, cell + 44, y + 14, outline=colour, fill=colour)
            canvas.text(cell + 52, y + 7, VERDICT_WORDS[verdict], size=9, va="center")
            y += 20
        raster.colorbar(canvas, cell + 30 + side * cell + 20, 0, side * cell, "viridis", low, high or 1.0)
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class VerdictMap(Drawing):
    """Every row the seed printed, step by step: one square each, coloured by how it compares with the run."""

    uses = ("seed_table",)

    def draw(self, run: ModelRun, path: Path) -> None:
        table = run.inputs["seed_table"]
        square, gap, pitch = 18, 4, 24
        canvas = raster.Canvas()
        labels = [f"{entry['what']} (line {entry['rows'][0]['line']})" for entry in table.values()]
        for i, entry in enumerate(table.values()):
            for j, row in enumerate(entry["rows"]):
                x, y = j * (square + gap), i * pitch
                colour = VERDICT_COLOURS[row["verdict"]]
                canvas.rect(x, y, x + square - 1, y + square - 1, outline=colour, fill=colour)
                key = row["item"].split("·")[-1].split("→")[-1].strip("[]")[:3]  # "E·A" -> "A", "[CLS]" -> "CLS"
                canvas.text(x + square / 2, y + square / 2, key, size=6, ha="center", va="center",
                            color=(255, 255, 255))
        raster.ticks_left(canvas, -4, [i * pitch + square / 2 for i in range(len(labels))], labels, size=8.5)
        y = len(labels) * pitch + 8
        for verdict, colour in VERDICT_COLOURS.items():
            count = sum(r["verdict"] == verdict for entry in table.values() for r in entry["rows"])
            canvas.rect(0, y, 14, y + 14, outline=colour, fill=colour)
            canvas.text(22, y + 7, f"{VERDICT_WORDS[verdict]}: {count}", size=9, va="center")
            y += 20
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class ClassBars(Drawing):
    """This run's class probabilities as bars, with the seed's printed ones written beside."""

    uses = ("class_names", "seed_table")
    tensor: Ref

    def draw(self, run: ModelRun, path: Path) -> None:
        probs = run.cpu(self.tensor)[0].float().tolist()
        seed_row = run.inputs["seed_table"].get("probs_cls", {}).get("rows", [{}])[0]
        width, pitch = 420, 34
        canvas = raster.Canvas()
        _, _, _, bottom = raster.hbars(canvas, 0, 0, width, probs, run.inputs["class_names"],
                                       [(0x39, 0x49, 0xAB)] * len(probs), 1.0, pitch)
        for k, p in enumerate(probs):
            seed_text = f"   (seed: {seed_row['printed'][k]})" if seed_row else ""
            canvas.text(p * width + 4, (k + 0.5) * pitch, f"{p:.4f}{seed_text}", size=9, va="center")
        canvas.text(width / 2, bottom + 3, "probability (this run)", ha="center")
        canvas.save(path)


DRAWINGS: Registry[type[Drawing]] = Registry("drawing", [
    (cls.key(), cls) for cls in (PatchGrid, QueryOverGrid, VerdictMap, ClassBars)])
