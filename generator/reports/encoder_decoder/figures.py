"""Figures specific to the encoder–decoder report; listed in ``DRAWINGS`` (the report merges them with
transformer_trace.figures.DRAWINGS).

A table and small bar panels: drawn with Pillow (transformer_trace.raster) like the heat maps, so the report needs no
matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from transformer_trace import raster
from transformer_trace.figures import LABELLED_CELLS, Drawing, grid, literal_labels, visual_order
from transformer_trace.registry import Registry
from transformer_trace.run import ModelRun
from transformer_trace.sources import InputRef, Ref

MOST_PANELS = 12  # prediction panels drawn; longer targets show evenly spaced positions


@dataclass(frozen=True, kw_only=True)
class TokenTable(Drawing):
    uses = ("src_tokens", "tgt_tokens", "src_vocab", "tgt_vocab")

    def draw(self, run: ModelRun, path: Path) -> None:
        sides = [("source", run.inputs["src_tokens"], run.inputs["src_vocab"]),
                 ("target", run.inputs["tgt_tokens"], run.inputs["tgt_vocab"])]
        canvas = raster.Canvas()
        y = 0
        for title, tokens, vocab in sides:
            shown = tokens[:LABELLED_CELLS]  # a long sentence: its first words (the pages list them all)
            more = f", first {len(shown)} of {len(tokens)} words" if len(shown) < len(tokens) else ""
            canvas.text(0, y, f"{title} sentence (position → word → ID{more})", size=10)
            box = raster.table(canvas, 20, y + 30, [str(i) for i in range(len(shown))],
                               [("word", [visual_order(t) for t in shown]), ("ID", [str(vocab[t]) for t in shown])])
            y = box[3] + 24
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class Predictions(Drawing):
    uses = ("tgt_words",)
    tensor: Ref
    rows: InputRef | None = None  # the run input that labels the rows; None: the list the declared shape gives

    def draw(self, run: ModelRun, path: Path) -> None:
        logits = run.cpu(self.tensor)[0].float()  # (T, V)
        probs = torch.softmax(logits, dim=-1).numpy()
        T, V = probs.shape
        vocab = run.inputs["tgt_words"]
        positions = literal_labels(self.axis_words(run, self.rows, self.tensor, -2), T)
        shown = (sorted({round(k * (T - 1) / (MOST_PANELS - 1)) for k in range(MOST_PANELS)}) if T > MOST_PANELS
                 else list(range(T)))
        grid_rows, grid_cols = grid(len(shown), 3)
        bars = min(V, 20)
        label_width = max(raster.text_width(visual_order(vocab[k]), 9) for k in range(V)) + 14
        # twenty bars a panel, twelve panels: the figure stays under ~2,600 px
        width, pitch = 300, 30 if bars <= 8 else 24
        canvas = raster.Canvas()
        if len(shown) < T:
            canvas.text(0, -40, f"{len(shown)} of the {T} target positions, evenly spaced", size=10.8)
        for index, t in enumerate(shown):
            r, c = divmod(index, grid_cols)
            x, y = label_width + c * (label_width + width + 24), r * (pitch * bars + 70)
            order = np.argsort(-probs[t], kind="stable")[:20]
            colours = [(0x39, 0x49, 0xAB) if k == order[0] else (0x9F, 0xA8, 0xDA) for k in order]
            raster.hbars(canvas, x, y, width, [float(probs[t][k]) for k in order],
                         [visual_order(vocab[k]) for k in order], colours, 1.0, pitch)
            canvas.text(x + width / 2, y - 6,
                        f"position {t} (input “{positions[t]}”) → “{visual_order(vocab[order[0]])}”", size=8.5,
                        ha="center", va="bottom")
        canvas.save(path)


DRAWINGS: Registry[type[Drawing]] = Registry("drawing", [(cls.key(), cls) for cls in (TokenTable, Predictions)])
