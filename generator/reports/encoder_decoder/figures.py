"""Figures specific to the encoder–decoder report; they register with the generic drawers in generator.figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from generator.figures import LABELLED_CELLS, axis_labels, drawer, grid, plain, pyplot, save

MOST_PANELS = 12  # prediction panels drawn; longer targets show evenly spaced positions
from generator.run import ModelRun


@drawer("src_tokens", "tgt_tokens", "src_vocab", "tgt_vocab")
def token_table(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    sides = [("source", run.inputs["src_tokens"], run.inputs["src_vocab"]), ("target", run.inputs["tgt_tokens"], run.inputs["tgt_vocab"])]
    width = min(max(len(sides[0][1]), len(sides[1][1])), LABELLED_CELLS)
    fig, axes = plt.subplots(2, 1, figsize=(min(2 + 1.1 * width, 18), 2.6))
    for ax, (title, tokens, vocab) in zip(axes, sides):
        ax.axis("off")
        shown = tokens[:LABELLED_CELLS]  # a long sentence: its first words (the pages list them all)
        cells = [[plain(t) for t in shown], [str(vocab[t]) for t in shown]]
        table = ax.table(cellText=cells, rowLabels=["word", "ID"], colLabels=[str(i) for i in range(len(shown))], loc="center", cellLoc="center")
        table.auto_set_font_size(False)
        table.set_fontsize(9)
        table.auto_set_column_width(list(range(len(shown))))
        table.scale(1, 1.3)
        more = f", first {len(shown)} of {len(tokens)} words" if len(shown) < len(tokens) else ""
        ax.set_title(f"{title} sentence (position → word → ID{more})", loc="left")
    save(fig, path)


@drawer("tgt_words")
def predictions(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    logits = run.cpu(args["tensor"])[0].float()  # (T, V)
    probs = torch.softmax(logits, dim=-1).numpy()
    T, V = probs.shape
    vocab = run.inputs["tgt_words"]
    positions = axis_labels(run, args["rows"], T)
    shown = sorted({round(k * (T - 1) / (MOST_PANELS - 1)) for k in range(MOST_PANELS)}) if T > MOST_PANELS else list(range(T))
    grid_rows, grid_cols = grid(len(shown), 3)
    fig, axes = plt.subplots(grid_rows, grid_cols, figsize=(4.2 * grid_cols, (0.9 + 0.24 * min(V, 20)) * grid_rows), squeeze=False)
    if len(shown) < T:
        fig.suptitle(f"{len(shown)} of the {T} target positions, evenly spaced")
    for index, ax in enumerate(axes.flat):
        if index >= len(shown):
            ax.axis("off")
            continue
        t = shown[index]
        order = np.argsort(-probs[t], kind="stable")[:20]
        colors = ["#3949ab" if k == order[0] else "#9fa8da" for k in order]
        ax.barh(range(len(order)), probs[t][order], color=colors)
        ax.set_yticks(range(len(order)), [plain(vocab[k]) for k in order])
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(f"position {t} (input “{positions[t]}”) → “{plain(vocab[order[0]])}”", fontsize=8.5)
    save(fig, path)
