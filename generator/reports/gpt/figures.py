"""Figures specific to the GPT report; they register with the generic drawers in generator.figures.

Every byte is labelled with models.gpt.byte_label (printable ASCII as itself, space as ␠, the rest
as hex), and every drawing stays readable at the longest prompt the context allows.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from matplotlib.patches import Rectangle

from generator.figures import as_numpy, axis_labels, drawer, grid, plain, plt, save
from generator.run import ModelRun
from models.gpt import byte_label

ROW = 16  # bytes per row of the byte table, as a hex dump
SHADES = {1: "#ffffff", 2: "#fff3e0", 3: "#e3f2fd", 4: "#f3e5f5"}  # by the character's UTF-8 length


def _char_text(ch: str) -> str:
    return "space" if ch == " " else plain(ch)


@drawer("characters")
def byte_table(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    cells = []  # (byte value, character or "", character length, first byte of its character?)
    for ch, values, _ in run.inputs["characters"]:
        for i, value in enumerate(values):
            cells.append((value, ch, len(values), i == 0))
    n = len(cells)
    cols = min(n, ROW)
    rows = math.ceil(n / cols)
    fig, ax = plt.subplots(figsize=(0.78 * cols + 0.9, 0.82 * rows + 0.5))
    for index, (value, ch, length, first) in enumerate(cells):
        r, c = divmod(index, cols)
        ax.add_patch(Rectangle((c, r), 1, 1, facecolor=SHADES.get(length, "#eeeeee"), edgecolor="#9e9e9e", linewidth=0.6))
        if first:
            ax.text(c + 0.5, r + 0.22, _char_text(ch) if length > 1 else "", ha="center", va="center", fontsize=7, color="#6d4c41")
        ax.text(c + 0.5, r + 0.52, plain(byte_label(value)), ha="center", va="center", fontsize=10 if len(byte_label(value)) == 1 else 8)
        ax.text(c + 0.5, r + 0.82, str(value), ha="center", va="center", fontsize=6.5, color="#616161")
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_xticks([c + 0.5 for c in range(cols)], [str(c) for c in range(cols)], fontsize=7)
    ax.set_yticks([r + 0.5 for r in range(rows)], [str(r * cols) for r in range(rows)], fontsize=7)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_xlabel("position within the row" if rows > 1 else "position")
    if rows > 1:
        ax.set_ylabel("first position")
    lengths = sorted({length for _, _, length, _ in cells})
    key = {1: "1-byte (ASCII)", 2: "2-byte", 3: "3-byte", 4: "4-byte"}
    handles = [Rectangle((0, 0), 1, 1, facecolor=SHADES[k], edgecolor="#9e9e9e") for k in lengths]
    ax.legend(handles, [key[k] + " characters" for k in lengths], loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(lengths), fontsize=7, frameon=False)
    ax.set_aspect("equal")
    save(fig, path)



def _context(labels: list[str], t: int, width: int = 8) -> str:
    start = max(0, t - width + 1)
    return ("…" if start else "") + " ".join(labels[start:t + 1])


@drawer()
def next_byte_topk(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    probs = as_numpy(run, args["tensor"])[0]  # (T, V)
    T, V = probs.shape
    k, n = args.get("k", 10), min(args.get("positions", 3), T)
    labels = axis_labels(run, args["rows"], T)
    positions = list(range(T - n, T))
    fig, axes = plt.subplots(1, n, figsize=(4.3 * n, 0.8 + 0.3 * k), squeeze=False)
    top = float(probs[positions].max())
    for ax, t in zip(axes.flat, positions):
        order = np.argsort(-probs[t], kind="stable")[:k]
        colors = ["#3949ab" if i == 0 else "#9fa8da" for i in range(len(order))]
        ax.barh(range(len(order)), probs[t][order], color=colors)
        ax.set_yticks(range(len(order)), [f"{plain(byte_label(int(b)))}  ({int(b)})" for b in order])
        ax.invert_yaxis()
        ax.axvline(1 / V, color="#e53935", linestyle="--", linewidth=1)
        ax.set_xlim(0, max(top * 1.15, 2.5 / V))
        for i, b in enumerate(order):
            ax.text(probs[t][b], i, f" {probs[t][b]:.4f}", va="center", fontsize=7)
        ax.set_title(f"position {t}{' (last)' if t == T - 1 else ''}, after\n{_context(labels, t, 6)}", fontsize=8.5)
        ax.set_xlabel("probability of the next byte")
    save(fig, path)


@drawer("cache_bytes", "n_bytes")
def kv_cache(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    cache = as_numpy(run, args["tensor"])[0, 0]  # (S, hs), head 1
    S, hs = cache.shape
    T = run.inputs["n_bytes"]
    fig, ax = plt.subplots(figsize=(min(2.5 + 0.12 * hs, 10), min(1.4 + 0.26 * S, 9)))
    limit = float(np.abs(cache).max()) or 1.0
    im = ax.imshow(cache, aspect="auto", cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest" if S <= 64 else "antialiased")
    ax.axhline(T - 0.5, color="black", linewidth=1.5)
    if S <= 40:
        labels = [plain(b) for b in run.inputs["cache_bytes"]]
        ax.set_yticks(range(S), [f"{i}: {w}" for i, w in enumerate(labels)], fontsize=7)
    ax.set_title(f"head 1 keys: positions 0–{T - 1} from the prompt pass" + (f", {T}–{S - 1} (below the line) from generated bytes fed back" if S > T else ""),
                 fontsize=8.5)
    ax.set_xlabel(f"feature of head 1 (0–{hs - 1})")
    ax.set_ylabel("cached position")
    fig.colorbar(im, ax=ax, fraction=0.03)
    save(fig, path)


@drawer("generated_bytes")
def generation(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    cached = run.cpu(args["tensor"])[0].double()  # (N, V)
    recomputed = run.cpu(args["recomputed_tensor"])[0].double()
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


@drawer("training")
def training_curve(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    facts = run.inputs["training"]
    record, corpus = facts["record"], facts["corpus"]
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


@drawer("training")
def head_roles(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    facts = run.inputs["training"]
    heads = [(i, h, stats) for i, block in enumerate(facts["heads"]) for h, stats in enumerate(block)]
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
