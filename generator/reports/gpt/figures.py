"""Figures specific to the GPT report; listed in ``DRAWINGS`` (the report merges them with generator.figures.DRAWINGS).

Every byte is labelled with models.gpt.byte_label (printable ASCII as itself, space as ␠, the rest
as hex), and every drawing stays readable at the longest prompt the context allows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from generator import raster
from generator.figures import Drawing, as_numpy, integer_ticks, literal_labels, plain, pyplot, save, visual_order
from generator.registry import Registry
from generator.run import ModelRun
from generator.sources import InputRef, Ref
from models.gpt import byte_label

ROW = 16  # bytes per row of the byte table, as a hex dump
SHADES = {1: "#ffffff", 2: "#fff3e0", 3: "#e3f2fd", 4: "#f3e5f5"}  # by the character's UTF-8 length


def _char_text(ch: str) -> str:
    return "space" if ch == " " else visual_order(ch)


@dataclass(frozen=True, kw_only=True)
class ByteTable(Drawing):
    uses = ("characters",)

    def draw(self, run: ModelRun, path: Path) -> None:
        cells = []  # (byte value, character or "", character length, first byte of its character?)
        for ch, values, _ in run.inputs["characters"]:
            for i, value in enumerate(values):
                cells.append((value, ch, len(values), i == 0))
        n = len(cells)
        cols = min(n, ROW)
        rows = math.ceil(n / cols)
        side, edge = 71, (0x9E, 0x9E, 0x9E)
        canvas = raster.Canvas()
        for index, (value, ch, length, first) in enumerate(cells):
            r, c = divmod(index, cols)
            x, y = c * side, r * side
            canvas.rect(x, y, x + side, y + side, outline=edge, fill=SHADES.get(length, "#eeeeee"))
            if first and length > 1:
                canvas.text(x + side / 2, y + 0.22 * side, _char_text(ch), size=7, ha="center", va="center", color=(0x6D, 0x4C, 0x41))
            label = byte_label(value)
            canvas.text(x + side / 2, y + 0.52 * side, visual_order(label), size=10 if len(label) == 1 else 8, ha="center", va="center")
            canvas.text(x + side / 2, y + 0.82 * side, str(value), size=6.5, ha="center", va="center", color=(0x61, 0x61, 0x61))
        bottom = 0
        for c in range(cols):
            bottom = max(bottom, canvas.text(c * side + side / 2, rows * side + 6, str(c), size=7, ha="center")[3])
        left = 0
        for r in range(rows):
            left = min(left, canvas.text(-6, r * side + side / 2, str(r * cols), size=7, ha="right", va="center")[0])
        canvas.text(cols * side / 2, bottom + 4, "position within the row" if rows > 1 else "position", ha="center")
        if rows > 1:
            canvas.text(left - 6, rows * side / 2, "first position", ha="right", va="center", rotation=90)
        key = {1: "1-byte (ASCII)", 2: "2-byte", 3: "3-byte", 4: "4-byte"}
        x = 8
        for length in sorted({length for _, _, length, _ in cells}):  # the legend, above the table
            canvas.rect(x, -22, x + 20, -14, outline=edge, fill=SHADES[length])
            x = canvas.text(x + 28, -18, key[length] + " characters", size=7, va="center")[2] + 20
        canvas.save(path)


def _context(labels: list[str], t: int, width: int = 8) -> str:
    start = max(0, t - width + 1)
    return ("…" if start else "") + " ".join(labels[start:t + 1])


@dataclass(frozen=True, kw_only=True)
class NextByteTopk(Drawing):
    tensor: Ref
    rows: InputRef | None = None  # the run input that labels the rows; None: the list the declared shape gives
    k: int = 10
    positions: int = 3

    def draw(self, run: ModelRun, path: Path) -> None:
        probs = as_numpy(run, self.tensor)[0]  # (T, V)
        T, V = probs.shape
        k, n = self.k, min(self.positions, T)
        labels = literal_labels(self.axis_words(run, self.rows, self.tensor, -2), T)
        positions = list(range(T - n, T))
        top = float(probs[positions].max())
        xmax = max(top * 1.15, 2.5 / V)
        width, pitch, x = 330, 26, 0
        canvas = raster.Canvas()
        for t in positions:
            order = np.argsort(-probs[t], kind="stable")[:k]
            names = [f"{visual_order(byte_label(int(b)))}  ({int(b)})" for b in order]
            x += max(raster.text_width(name, 9) for name in names) + 14
            colours = [(0x39, 0x49, 0xAB) if i == 0 else (0x9F, 0xA8, 0xDA) for i in range(len(order))]
            _, _, _, bottom = raster.hbars(canvas, x, 0, width, [float(probs[t][b]) for b in order], names, colours, xmax, pitch)
            uniform = x + round(width / V / xmax)
            for y in range(0, pitch * len(order), 8):  # the uniform 1/256, dashed
                canvas.line(uniform, y, uniform, min(y + 4, pitch * len(order) - 1), fill=(0xE5, 0x39, 0x35))
            for i, b in enumerate(order):
                canvas.text(x + probs[t][b] / xmax * width + 2, (i + 0.5) * pitch, f" {probs[t][b]:.4f}", size=7, va="center")
            canvas.text(x + width / 2, -6, f"position {t}{' (last)' if t == T - 1 else ''}, after\n{_context(labels, t, 6)}", size=8.5,
                        ha="center", va="bottom")
            canvas.text(x + width / 2, bottom + 3, "probability of the next byte", ha="center")
            x += width + 24
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class KvCache(Drawing):
    uses = ("cache_bytes", "n_bytes")
    tensor: Ref

    def draw(self, run: ModelRun, path: Path) -> None:
        cache = as_numpy(run, self.tensor)[0, 0]  # (S, hs), head 1
        S, hs = cache.shape
        T = run.inputs["n_bytes"]
        width, height = round((min(2.5 + 0.12 * hs, 10) - 1.6) * raster.DPI), round((min(1.4 + 0.26 * S, 9) - 0.75) * raster.DPI)
        limit = float(np.abs(cache).max()) or 1.0
        canvas = raster.Canvas()
        raster.heatmap(canvas, 0, 0, cache, width, height, "RdBu_r", -limit, limit, smooth=S > 64)
        line_y = round(T * height / S)
        canvas.line(0, line_y, width - 1, line_y, width=2)  # prompt above, generated bytes below
        if S <= 40:
            labels = [visual_order(b) for b in run.inputs["cache_bytes"]]
            left = raster.ticks_left(canvas, 0, raster.cell_centres(0, height, S), [f"{i}: {w}" for i, w in enumerate(labels)], size=7)
        else:
            ticks = integer_ticks(S)
            left = raster.ticks_left(canvas, 0, [(t + 0.5) * height / S for t in ticks], [str(t) for t in ticks])
        ticks = integer_ticks(hs, most=6)
        bottom = raster.ticks_below(canvas, height, [(t + 0.5) * width / hs for t in ticks], [str(t) for t in ticks])
        canvas.text(width / 2, bottom + 3, f"feature of head 1 (0–{hs - 1})", ha="center")
        canvas.text(left - 6, height / 2, "cached position", ha="right", va="center", rotation=90)
        canvas.text(width / 2, -6, f"head 1 keys: positions 0–{T - 1} from the prompt pass"
                    + (f", {T}–{S - 1} (below the line) from generated bytes fed back" if S > T else ""), size=8.5, ha="center", va="bottom")
        raster.colorbar(canvas, width + 24, 0, height, "RdBu_r", -limit, limit)
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class Generation(Drawing):
    uses = ("generated_bytes",)
    tensor: Ref
    recomputed_tensor: Ref

    def draw(self, run: ModelRun, path: Path) -> None:
        plt = pyplot()
        cached = run.cpu(self.tensor)[0].double()  # (N, V)
        recomputed = run.cpu(self.recomputed_tensor)[0].double()
        probs = torch.softmax(cached, dim=-1).numpy()
        N, V = probs.shape
        chosen = probs.argmax(-1)
        labels = [plain(b) for b in run.inputs["generated_bytes"]]
        diffs = (cached - recomputed).abs().amax(-1).numpy()
        width = min(max(4.5, 3 + 0.45 * N), 16)
        fig, (left, right) = plt.subplots(1, 2, figsize=(2 * width if N <= 16 else width, 3.2), squeeze=True,
                                          gridspec_kw={"width_ratios": [1, 1]})
        p = probs[np.arange(N), chosen]
        left.bar(range(N), p, color="#3949ab")
        left.axhline(1 / V, color="#e53935", linestyle="--", linewidth=1, label="uniform 1/256")
        step_labels = N <= 32
        if step_labels:
            left.set_xticks(range(N), [str(i + 1) for i in range(N)])
            for i, (w, value) in enumerate(zip(labels, p)):
                left.text(i, value, w, ha="center", va="bottom", fontsize=12 if N <= 16 else 8)
        left.set_ylim(0, max(float(p.max()) * 1.3, 2.5 / V))
        left.set_xlabel("step (the byte it chose above its bar)")
        left.set_ylabel("probability of the chosen byte")
        left.legend(fontsize=7, loc="upper right")
        left.set_title("greedy continuation")
        right.bar(range(N), diffs, color="#00897b")
        if step_labels:
            right.set_xticks(range(N), [str(i + 1) for i in range(N)])
        right.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
        if float(diffs.max()) == 0.0:
            right.set_ylim(0, 1e-7)
            right.text(0.5, 0.5, "identical at every step (difference 0)", transform=right.transAxes, ha="center", va="center")
        right.set_xlabel("step")
        right.set_ylabel("max |cached − recomputed| logit")
        right.set_title("key/value cache vs recomputation")
        save(fig, path)


@dataclass(frozen=True, kw_only=True)
class TrainingCurve(Drawing):
    uses = ("training",)

    def draw(self, run: ModelRun, path: Path) -> None:
        facts = run.inputs["training"]
        record, corpus = facts["record"], facts["corpus"]
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7.5, 3.6))
        if record:
            bits = np.asarray(record["loss_curve"]) / math.log(2)  # nats -> bits per byte
            steps = np.arange(1, len(bits) + 1)
            window = max(1, len(bits) // 40)
            smooth = np.convolve(bits, np.ones(window) / window, mode="valid")
            ax.plot(steps, bits, color="#9fa8da", linewidth=0.6, label="training batch")
            ax.plot(steps[window - 1:], smooth, color="#3949ab", linewidth=1.8, label=f"running mean of {window} steps")
            if record["held_out_curve"]:
                held = np.asarray(record["held_out_curve"])
                ax.plot(held[:, 0], held[:, 1], "o", color="#e65100", markersize=4, label="held out")
            last = len(bits)
            ax.set_xlabel("optimiser step")
            ax.set_title(f"{len(bits):,} steps of {record['training']['batch']} × {record['training']['context']} bytes", fontsize=9)
        else:
            last = 1
            ax.set_xticks([])
            ax.set_title("random weights: no training (only the measured held-out bits per byte)", fontsize=9)
        ax.axhline(8, color="#e53935", linestyle="--", linewidth=1, label="uniform guess, 8 bits")
        ax.axhline(corpus["bigram_bits_per_byte"], color="#00897b", linestyle=":", linewidth=1.5,
                   label=f"bigram baseline, {corpus['bigram_bits_per_byte']:.2f} bits")
        ax.plot([last], [facts["held_out_bits"]], "*", color="black", markersize=12, label=f"this run, held out: {facts['held_out_bits']:.2f} bits")
        ax.set_ylabel("bits per byte")
        ax.set_ylim(0, max(9.0, facts["held_out_bits"] + 0.5))
        ax.legend(fontsize=7, loc="upper right", ncol=2)
        save(fig, path)


@dataclass(frozen=True, kw_only=True)
class HeadRoles(Drawing):
    uses = ("training",)

    def draw(self, run: ModelRun, path: Path) -> None:
        facts = run.inputs["training"]
        heads = [(i, h, stats) for i, block in enumerate(facts["heads"]) for h, stats in enumerate(block)]
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(max(4.5, 0.75 * len(heads) + 2), 3.4))
        if not heads:
            ax.text(0.5, 0.5, "a one-byte prompt: no previous byte to attend to", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
            save(fig, path)
            return
        x = np.arange(len(heads))
        previous = [s["previous"] for _, _, s in heads]
        same = [s["same"] for _, _, s in heads]
        best = facts["best_head"]
        edges = ["black" if [i, h] == best else "none" for i, h, _ in heads]
        ax.bar(x - 0.2, previous, 0.4, color="#3949ab", edgecolor=edges, linewidth=1.5, label="on the previous byte")
        ax.bar(x + 0.2, same, 0.4, color="#9fa8da", label="on itself")
        ax.set_xticks(x, [f"block {i + 1}\nhead {h + 1}" for i, h, _ in heads], fontsize=7)
        ax.set_ylim(0, 1)
        ax.set_ylabel("mean attention share")
        right = ax.twinx()
        right.plot(x, [s["entropy"] for _, _, s in heads], "o", color="#e65100", label="mean row entropy")
        right.axhline(facts["uniform_row_entropy"], color="#e65100", linestyle=":", linewidth=1, label="uniform rows")
        right.set_ylim(0, max(1.0, facts["uniform_row_entropy"] * 1.15))
        right.set_ylabel("bits")
        lines, labels = ax.get_legend_handles_labels()
        more, more_labels = right.get_legend_handles_labels()
        ax.legend(lines + more, labels + more_labels, fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=4, frameon=False)
        save(fig, path)


DRAWINGS: Registry[type[Drawing]] = Registry("drawing", [(cls.key(), cls) for cls in (ByteTable, NextByteTopk, KvCache, Generation, TrainingCurve, HeadRoles)])
