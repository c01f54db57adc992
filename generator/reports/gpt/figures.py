"""Figures specific to the GPT report; listed in ``DRAWINGS`` (the report merges them with
transformer_trace.figures.DRAWINGS).

Every byte is labelled with transformer_trace.models.gpt.byte_label (printable ASCII as itself, space as ␠, the rest
as hex), and every drawing stays readable at the longest prompt the context allows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from transformer_trace import raster
from transformer_trace.figures import Drawing, as_numpy, integer_ticks, literal_labels, visual_order
from transformer_trace.registry import Registry
from transformer_trace.run import ModelRun
from transformer_trace.sources import InputRef, Ref
from transformer_trace.models.gpt import byte_label

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
                canvas.text(x + side / 2, y + 0.22 * side, _char_text(ch), size=7, ha="center", va="center",
                            color=(0x6D, 0x4C, 0x41))
            label = byte_label(value)
            canvas.text(x + side / 2, y + 0.52 * side, visual_order(label), size=10 if len(label) == 1 else 8,
                        ha="center", va="center")
            canvas.text(x + side / 2, y + 0.82 * side, str(value), size=6.5, ha="center", va="center",
                        color=(0x61, 0x61, 0x61))
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
            _, _, _, bottom = raster.hbars(canvas, x, 0, width, [float(probs[t][b]) for b in order], names, colours,
                                           xmax, pitch)
            uniform = x + round(width / V / xmax)
            for y in range(0, pitch * len(order), 8):  # the uniform 1/256, dashed
                canvas.line(uniform, y, uniform, min(y + 4, pitch * len(order) - 1), fill=(0xE5, 0x39, 0x35))
            for i, b in enumerate(order):
                canvas.text(x + probs[t][b] / xmax * width + 2, (i + 0.5) * pitch, f" {probs[t][b]:.4f}", size=7,
                            va="center")
            canvas.text(x + width / 2, -6,
                        f"position {t}{' (last)' if t == T - 1 else ''}, after\n{_context(labels, t, 6)}", size=8.5,
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
        width, height = (round((min(2.5 + 0.12 * hs, 10) - 1.6) * raster.DPI),
                         round((min(1.4 + 0.26 * S, 9) - 0.75) * raster.DPI))
        limit = float(np.abs(cache).max()) or 1.0
        canvas = raster.Canvas()
        raster.heatmap(canvas, 0, 0, cache, width, height, "RdBu_r", -limit, limit, smooth=S > 64)
        line_y = round(T * height / S)
        canvas.line(0, line_y, width - 1, line_y, width=2)  # prompt above, generated bytes below
        if S <= 40:
            labels = [visual_order(b) for b in run.inputs["cache_bytes"]]
            left = raster.ticks_left(canvas, 0, raster.cell_centres(0, height, S),
                                     [f"{i}: {w}" for i, w in enumerate(labels)], size=7)
        else:
            ticks = integer_ticks(S)
            left = raster.ticks_left(canvas, 0, [(t + 0.5) * height / S for t in ticks], [str(t) for t in ticks])
        ticks = integer_ticks(hs, most=6)
        bottom = raster.ticks_below(canvas, height, [(t + 0.5) * width / hs for t in ticks], [str(t) for t in ticks])
        canvas.text(width / 2, bottom + 3, f"feature of head 1 (0–{hs - 1})", ha="center")
        canvas.text(left - 6, height / 2, "cached position", ha="right", va="center", rotation=90)
        canvas.text(width / 2, -6, f"head 1 keys: positions 0–{T - 1} from the prompt pass"
                    + (f", {T}–{S - 1} (below the line) from generated bytes fed back" if S > T else ""), size=8.5,
                    ha="center", va="bottom")
        raster.colorbar(canvas, width + 24, 0, height, "RdBu_r", -limit, limit)
        canvas.save(path)


def _axes_px(fig_inches: float, fraction: float) -> int:
    """A matplotlib subplot's extent in pixels: the figure's size times the share its default margins leave."""
    return round(fig_inches * fraction * raster.DPI)


def _sci(ticks: list[float]) -> tuple[list[str], str]:
    """Tick labels in units of 10^k, k from the largest tick, and the offset text (matplotlib's sci style, (0, 0))."""
    top = max(abs(t) for t in ticks) or 1.0
    exponent = math.floor(math.log10(top))
    labels = raster.tick_labels([t / 10**exponent for t in ticks])
    return labels, f"1e{exponent}".replace("-", raster.MINUS)


def _bar_xlim(n: int) -> tuple[float, float]:
    """x range of ``n`` bars of width 0.8 at 0 … n − 1, with matplotlib's 5% margins."""
    low, high = -0.4, n - 0.6
    return low - 0.05 * (high - low), high + 0.05 * (high - low)


def _step_ticks(n: int) -> tuple[list[int], list[str]]:
    """Bar positions and step labels: every step up to 32, beyond that round step numbers."""
    if n <= 32:
        return list(range(n)), [str(i + 1) for i in range(n)]
    steps = [int(t) for t in raster.nice_ticks(1, n, 8) if t == int(t) and t >= 1]
    return [s - 1 for s in steps], [str(s) for s in steps]


@dataclass(frozen=True, kw_only=True)
class Generation(Drawing):
    uses = ("generated_bytes",)
    tensor: Ref
    recomputed_tensor: Ref

    def draw(self, run: ModelRun, path: Path) -> None:
        cached = run.cpu(self.tensor)[0].double()  # (N, V)
        recomputed = run.cpu(self.recomputed_tensor)[0].double()
        probs = torch.softmax(cached, dim=-1).numpy()
        N, V = probs.shape
        chosen = probs.argmax(-1)
        labels = [visual_order(b) for b in run.inputs["generated_bytes"]]
        diffs = (cached - recomputed).abs().amax(-1).numpy()
        fig_w = min(max(4.5, 3 + 0.45 * N), 16) * (2 if N <= 16 else 1)
        width, height = _axes_px(fig_w / 2.2, 0.775), _axes_px(3.2, 0.77)  # two panels, 0.2 of a panel apart
        gap = round(0.2 * fig_w / 2.2 * 0.775 * raster.DPI)
        canvas = raster.Canvas()
        xlim = _bar_xlim(N)
        positions, step_labels = _step_ticks(N)

        p = probs[np.arange(N), chosen]
        ylim = (0.0, max(float(p.max()) * 1.3, 2.5 / V))
        left = raster.Axes(canvas, 0, 0, width, height, xlim, ylim)
        for i, value in enumerate(p):
            left.bar(i, float(value), 0.8, "#3949ab")
        left.hline(1 / V, "#e53935", 1.0, raster.DASHED)
        bottom = left.xticks(positions, step_labels)
        if N <= 32:
            for i, (w, value) in enumerate(zip(labels, p)):
                canvas.text(left.px(i), left.py(float(value)), w, size=12 if N <= 16 else 8, ha="center", va="bottom")
        ticks = raster.axis_ticks(*ylim, height, vertical=True)
        edge = left.yticks(ticks, raster.tick_labels(ticks))
        canvas.text(width / 2, bottom + 3, "step (the byte it chose above its bar)", ha="center")
        canvas.text(edge - 6, height / 2, "probability of the chosen byte", ha="right", va="center", rotation=90)
        left.title("greedy continuation")
        em = 7 * raster.PX_PER_PT
        raster.legend(canvas, [("line", "#e53935", 1.0, raster.DASHED, "uniform 1/256")], width - 0.5 * em, 0.5 * em)

        x = width + gap
        top = float(diffs.max())
        ylim = (0.0, 1e-7) if top == 0.0 else (0.0, top * 1.05)
        right = raster.Axes(canvas, x, 0, width, height, xlim, ylim)
        for i, value in enumerate(diffs):
            right.bar(i, float(value), 0.8, "#00897b")
        if top == 0.0:
            canvas.text(x + width / 2, height / 2, "identical at every step (difference 0)", ha="center", va="center")
        bottom = right.xticks(positions, step_labels)
        ticks = raster.axis_ticks(*ylim, height, vertical=True)
        tick_text, offset = _sci(ticks)
        edge = right.yticks(ticks, tick_text)
        canvas.text(x, -3, offset, va="bottom")
        canvas.text(x + width / 2, bottom + 3, "step", ha="center")
        canvas.text(edge - 6, height / 2, "max |cached − recomputed| logit", ha="right", va="center", rotation=90)
        right.title("key/value cache vs recomputation")
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class TrainingCurve(Drawing):
    uses = ("training",)

    def draw(self, run: ModelRun, path: Path) -> None:
        facts = run.inputs["training"]
        record, corpus = facts["record"], facts["corpus"]
        width, height = _axes_px(7.5, 0.775), _axes_px(3.6, 0.77)
        ylim = (0.0, max(9.0, facts["held_out_bits"] + 0.5))
        bigram = corpus["bigram_bits_per_byte"]
        if record:
            bits = np.asarray(record["loss_curve"]) / math.log(2)  # nats -> bits per byte
            steps = np.arange(1, len(bits) + 1)
            window = max(1, len(bits) // 40)
            smooth = np.convolve(bits, np.ones(window) / window, mode="valid")
            last = len(bits)
            span = max(last - 1, 1)
            xlim = (1 - 0.05 * span, last + 0.05 * span)
        else:
            last, xlim = 1, (0.0, 2.0)
        canvas = raster.Canvas()
        ax = raster.Axes(canvas, 0, 0, width, height, xlim, ylim)
        entries: list[tuple] = []  # raster.legend's entries: ("line", ...) and ("marker", ...) tuples
        if record:
            ax.line(steps, bits, "#9fa8da", 0.6)
            ax.line(steps[window - 1:], smooth, "#3949ab", 1.8)
            entries += [("line", "#9fa8da", 0.6, None, "training batch"),
                        ("line", "#3949ab", 1.8, None, f"running mean of {window} steps")]
            if record["held_out_curve"]:
                held = np.asarray(record["held_out_curve"])
                ax.markers(held[:, 0], held[:, 1], "o", 4, "#e65100")
                entries.append(("marker", "o", 4, "#e65100", "held out"))
            ticks = [t for t in raster.axis_ticks(*xlim, width, vertical=False) if xlim[0] <= t <= xlim[1]]
            bottom = ax.xticks(ticks, raster.tick_labels(ticks))
            canvas.text(width / 2, bottom + 3, "optimiser step", ha="center")
            ax.title(f"{len(bits):,} steps of {record['training']['batch']} × {record['training']['context']} bytes",
                     size=9)
        else:
            ax.title("random weights: no training (only the measured held-out bits per byte)", size=9)
        ax.hline(8, "#e53935", 1.0, raster.DASHED)
        ax.hline(bigram, "#00897b", 1.5, raster.DOTTED)
        ax.markers([last], [facts["held_out_bits"]], "*", 12, (0, 0, 0))
        entries += [("line", "#e53935", 1.0, raster.DASHED, "uniform guess, 8 bits"),
                    ("line", "#00897b", 1.5, raster.DOTTED, f"bigram baseline, {bigram:.2f} bits"),
                    ("marker", "*", 12, (0, 0, 0), f"this run, held out: {facts['held_out_bits']:.2f} bits")]
        ticks = raster.axis_ticks(*ylim, height, vertical=True)
        edge = ax.yticks(ticks, raster.tick_labels(ticks))
        canvas.text(edge - 6, height / 2, "bits per byte", ha="right", va="center", rotation=90)
        em = 7 * raster.PX_PER_PT
        if record:
            raster.legend(canvas, entries, width - 0.5 * em, 0.5 * em, ncol=2)
        else:  # lower right, clear of the star (near 8 bits for random weights) and of the bigram line
            raster.legend(canvas, entries, width - 0.5 * em, height - 0.5 * em, corner="lower right", ncol=2)
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class HeadRoles(Drawing):
    uses = ("training",)

    def draw(self, run: ModelRun, path: Path) -> None:
        facts = run.inputs["training"]
        heads = [(i, h, stats) for i, block in enumerate(facts["heads"]) for h, stats in enumerate(block)]
        canvas = raster.Canvas()
        if not heads:
            width, height = _axes_px(4.5, 0.9), _axes_px(3.4, 0.82)  # the size of the chart it stands for, blank
            canvas.rect(0, 0, width, height, outline=(255, 255, 255))
            canvas.text(width / 2, height / 2, "a one-byte prompt: no previous byte to attend to", ha="center",
                        va="center")
            canvas.save(path)
            return
        n = len(heads)
        width, height = _axes_px(max(4.5, 0.75 * n + 2), 0.775), _axes_px(3.4, 0.77)
        low, high = -0.4, n - 0.6
        xlim = (low - 0.05 * (high - low), high + 0.05 * (high - low))
        entropy_lim = (0.0, max(1.0, facts["uniform_row_entropy"] * 1.15))
        ax = raster.Axes(canvas, 0, 0, width, height, xlim, (0.0, 1.0))
        best = facts["best_head"]
        for x, (i, h, stats) in enumerate(heads):
            outlined = [i, h] == best
            ax.bar(x - 0.2, stats["previous"], 0.4, "#3949ab", edge=(0, 0, 0) if outlined else None, edge_pt=1.5)
            ax.bar(x + 0.2, stats["same"], 0.4, "#9fa8da")
        ax.markers(range(n), [s["entropy"] for _, _, s in heads], "o", 6, "#e65100", ylim=entropy_lim)
        ax.hline(facts["uniform_row_entropy"], "#e65100", 1.0, raster.DOTTED, ylim=entropy_lim)
        ax.xticks(range(n), [f"block {i + 1}\nhead {h + 1}" for i, h, _ in heads], size=7)
        ticks = raster.axis_ticks(0.0, 1.0, height, vertical=True)
        edge = ax.yticks(ticks, raster.tick_labels(ticks))
        canvas.text(edge - 6, height / 2, "mean attention share", ha="right", va="center", rotation=90)
        ticks = raster.axis_ticks(*entropy_lim, height, vertical=True)
        edge = ax.yticks_right(ticks, raster.tick_labels(ticks), ylim=entropy_lim)
        canvas.text(edge + 6, height / 2, "bits", va="center", rotation=90)
        em = 7 * raster.PX_PER_PT
        raster.legend(canvas, [("patch", "#3949ab", "on the previous byte"), ("patch", "#9fa8da", "on itself"),
                               ("marker", "o", 6, "#e65100", "mean row entropy"),
                               ("line", "#e65100", 1.0, raster.DOTTED, "uniform rows")],
                      0, -0.5 * em, corner="lower left", ncol=4, frame=False)
        canvas.save(path)


DRAWINGS: Registry[type[Drawing]] = Registry("drawing", [
    (cls.key(), cls) for cls in (ByteTable, NextByteTopk, KvCache, Generation, TrainingCurve, HeadRoles)])
