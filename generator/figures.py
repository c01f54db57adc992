"""Figures for the report pages, drawn with matplotlib from the captured tensors.

Each drawing function takes the run, the catalogue's figure arguments and a target
path; files are PNG without timestamps, so the same tensors give the same bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import arabic_reshaper
import matplotlib
from bidi import get_display

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from matplotlib import font_manager  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from PIL import Image  # noqa: E402

from generator.checks import IMAGENET_MEAN, IMAGENET_STD  # noqa: E402
from generator.run import ModelRun  # noqa: E402

DPI = 110
PNG_METADATA = {"Software": None}  # no version stamp: byte-identical output across runs
# Latin/Greek/Hebrew/Arabic, CJK, emoji; only those installed (scripts/install-chromium.sh adds the last two),
# so a machine without them gets boxes for those glyphs rather than a warning per figure.
_INSTALLED = {font.name for font in font_manager.fontManager.ttflist}
FONT_FALLBACK = [name for name in ("DejaVu Sans", "Noto Sans CJK JP", "Symbola") if name in _INSTALLED] or ["DejaVu Sans"]

plt.rcParams.update({
    "font.family": FONT_FALLBACK,  # a list: matplotlib falls back glyph by glyph
    "font.size": 9,
    "axes.titlesize": 10,
    "figure.dpi": DPI,
    "savefig.bbox": "tight",
})

DRAWERS: dict[str, Callable[[ModelRun, dict[str, Any], Path], None]] = {}
# Run inputs (besides the tensors named in a figure's arguments) that each kind of figure draws on.
INPUTS_USED: dict[str, tuple[str, ...]] = {}


def drawer(*inputs: str):
    def register(fn: Callable[[ModelRun, dict[str, Any], Path], None]):
        DRAWERS[fn.__name__] = fn
        INPUTS_USED[fn.__name__] = inputs
        return fn

    return register


def _save(fig: plt.Figure, path: Path) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=DPI, format="png", metadata=PNG_METADATA)
    plt.close(fig)
    # 256-colour palette PNG: about a third of the bytes, indistinguishable for plots and heat maps.
    image = Image.open(buffer).convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    image.save(path, format="PNG", optimize=True)


def plain(text: str) -> str:
    """User text as literal figure text.

    matplotlib would read $...$ as math, and it lays glyphs out left to right only, so
    right-to-left words (Hebrew, Arabic) are shaped and put in visual order first.
    """
    text = str(text)
    if any("\u0590" <= ch <= "\u08ff" or "\ufb1d" <= ch <= "\ufefc" for ch in text):
        text = get_display(arabic_reshaper.reshape(text))
    return text.replace("$", r"\$")


def _labels(run: ModelRun, key: str | None, n: int) -> list[str]:
    if key is None:
        return [str(i) for i in range(n)]
    return [plain(w) for w in run.inputs[key]][:n]


def _np(run: ModelRun, name: str) -> np.ndarray:
    return run.cpu(name).float().numpy()


def _grid(n: int, max_cols: int = 4) -> tuple[int, int]:
    cols = min(n, max_cols)
    return math.ceil(n / cols), cols


# ----------------------------------------------------------------------------- both models


@drawer("src_tokens", "tgt_tokens", "src_vocab", "tgt_vocab")
def token_table(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    sides = [("source", run.inputs["src_tokens"], run.inputs["src_vocab"]), ("target", run.inputs["tgt_tokens"], run.inputs["tgt_vocab"])]
    width = max(len(sides[0][1]), len(sides[1][1]))
    fig, axes = plt.subplots(2, 1, figsize=(min(2 + 1.1 * width, 18), 2.6))
    for ax, (title, tokens, vocab) in zip(axes, sides):
        ax.axis("off")
        cells = [[plain(t) for t in tokens], [str(vocab[t]) for t in tokens]]
        table = ax.table(cellText=cells, rowLabels=["word", "ID"], colLabels=[str(i) for i in range(len(tokens))], loc="center", cellLoc="center")
        table.auto_set_font_size(False)
        table.set_fontsize(9)
        table.auto_set_column_width(list(range(len(tokens))))
        table.scale(1, 1.3)
        ax.set_title(f"{title} sentence (position → word → ID)", loc="left")
    _save(fig, path)


@drawer()
def matrix(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    data = _np(run, args["tensor"])
    data = data.reshape(-1, data.shape[-1])  # (rows, features)
    cols = min(args.get("max_cols", 64), data.shape[1])
    data = data[:, :cols]
    rows = data.shape[0]
    fig, ax = plt.subplots(figsize=(min(2 + cols * 0.09, 14), min(1.2 + rows * 0.32, 9)))
    limit = float(np.abs(data).max()) or 1.0
    im = ax.imshow(data, aspect="auto", cmap=args.get("cmap", "viridis"), vmin=-limit, vmax=limit, interpolation="nearest")
    if "rows" in args and rows <= 40:
        ax.set_yticks(range(rows), _labels(run, args["rows"], rows))
    ax.set_xlabel(args.get("xlabel", "feature") + f" (0–{cols - 1})")
    if "ylabel" in args:
        ax.set_ylabel(args["ylabel"])
    fig.colorbar(im, ax=ax, fraction=0.025)
    _save(fig, path)


@drawer()
def positional(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    before, after = (_np(run, name)[0] for name in args["tensors"])
    added = after - before
    labels = _labels(run, args["rows"], added.shape[0])
    fig, axes = plt.subplots(1, 2, figsize=(12, 1.6 + 0.3 * added.shape[0]), sharey=True)
    for ax, data, title in zip(axes, (added, after), ("added positional encoding", "embedding + position")):
        im = ax.imshow(data, aspect="auto", cmap="RdBu_r", vmin=-np.abs(data).max(), vmax=np.abs(data).max(), interpolation="nearest")
        ax.set_title(title)
        ax.set_xlabel("feature")
        fig.colorbar(im, ax=ax, fraction=0.03)
    axes[0].set_yticks(range(len(labels)), [f"{i}: {w}" for i, w in enumerate(labels)])
    _save(fig, path)


@drawer()
def attention_heads(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    weights = _np(run, args["tensor"])[0]  # (h, rows, cols)
    heads, n_rows, n_cols = weights.shape
    grid_rows, grid_cols = _grid(heads, 2 if heads <= 4 else 4)
    cell = 3.4 if n_cols <= 16 else 3.0
    fig, axes = plt.subplots(grid_rows, grid_cols, figsize=(cell * grid_cols + 1, cell * grid_rows + 0.4), squeeze=False)
    finite = weights[np.isfinite(weights)]
    diverging = finite.min() < 0
    many = n_cols > 64
    # With hundreds of tokens a few large weights would wash everything else out: clip the scale at the 99.5th percentile.
    top = float(np.percentile(np.abs(finite), 99.5)) if many else float(np.abs(finite).max())
    vmin, vmax = (-top, top) if diverging else (0.0, max(top, 1e-9))
    labelled = n_rows <= 24 and n_cols <= 24
    for index, ax in enumerate(axes.flat):
        if index >= heads:
            ax.axis("off")
            continue
        im = ax.imshow(weights[index], cmap=args.get("cmap", "viridis"), vmin=vmin, vmax=vmax,
                       interpolation="antialiased" if many else "nearest")  # many tokens: average, don't skip, when shrinking
        ax.set_title(f"head {index + 1}")
        if labelled:
            ax.set_xticks(range(n_cols), _labels(run, args.get("cols"), n_cols), rotation=60, ha="right")
            ax.set_yticks(range(n_rows), _labels(run, args.get("rows"), n_rows))
            # Every panel has the same words: label rows once per grid row, columns under the lowest panel.
            ax.tick_params(labelleft=index % grid_cols == 0, labelbottom=index + grid_cols >= heads)
            if args.get("annotate") and n_rows * n_cols <= 100:
                for (i, j), value in np.ndenumerate(weights[index]):
                    if np.isfinite(value):
                        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6.5,
                                color="white" if (value - vmin) < 0.6 * (vmax - vmin) else "black")
    fig.supxlabel("key: the token attended to")
    fig.supylabel("query: the token attending")
    fig.colorbar(im, ax=axes, fraction=0.02)
    _save(fig, path)


@drawer()
def mask(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    m = _np(run, args["tensor"])[0, 0]
    T = m.shape[0]
    labels = _labels(run, args["rows"], T)
    fig, ax = plt.subplots(figsize=(1.5 + 0.55 * T, 1.2 + 0.5 * T))
    ax.imshow(np.isinf(m), cmap=ListedColormap(["white", "#9e9e9e"]), vmin=0, vmax=1)
    for (i, j), value in np.ndenumerate(m):
        ax.text(j, i, "0" if value == 0 else "−∞", ha="center", va="center")
    ax.set_xticks(range(T), labels, rotation=60, ha="right")
    ax.set_yticks(range(T), labels)
    ax.set_xlabel("key position (may be read?)")
    ax.set_ylabel("query position")
    _save(fig, path)


@drawer("tgt_words")
def predictions(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    logits = run.cpu(args["tensor"])[0].float()  # (T, V)
    probs = torch.softmax(logits, dim=-1).numpy()
    T, V = probs.shape
    vocab = run.inputs["tgt_words"]
    positions = _labels(run, args["rows"], T)
    grid_rows, grid_cols = _grid(T, 3)
    fig, axes = plt.subplots(grid_rows, grid_cols, figsize=(4.2 * grid_cols, (0.9 + 0.24 * min(V, 20)) * grid_rows), squeeze=False)
    for t, ax in enumerate(axes.flat):
        if t >= T:
            ax.axis("off")
            continue
        order = np.argsort(-probs[t], kind="stable")[:20]
        colors = ["#3949ab" if k == order[0] else "#9fa8da" for k in order]
        ax.barh(range(len(order)), probs[t][order], color=colors)
        ax.set_yticks(range(len(order)), [plain(vocab[k]) for k in order])
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(f"position {t} (input “{positions[t]}”) → “{plain(vocab[order[0]])}”", fontsize=8.5)
    _save(fig, path)


# ----------------------------------------------------------------------------- ViT


def _unnormalise(image: torch.Tensor) -> np.ndarray:
    mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(3, 1, 1)
    return (image.float() * std + mean).clamp(0, 1).permute(1, 2, 0).numpy()  # (3, H, W) -> (H, W, 3)


@drawer("original_image", "image_mode")
def input_image(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    original = run.inputs["original_image"]
    shown = _unnormalise(run.cpu(args["tensor"])[0])
    P = run.dims["P"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 5))
    axes[0].imshow(original)
    axes[0].set_title(f"as loaded: {original.width}×{original.height} {plain(run.inputs['image_mode'])}")
    axes[1].imshow(shown)
    H, W = shown.shape[:2]
    for x in range(0, W + 1, P):
        axes[1].axvline(x - 0.5, color="white", linewidth=0.5)
    for y in range(0, H + 1, P):
        axes[1].axhline(y - 0.5, color="white", linewidth=0.5)
    axes[1].set_title(f"model input: {W}×{H}, {H // P}×{W // P} patches of {P}×{P}")
    for ax in axes:
        ax.axis("off")
    _save(fig, path)


@drawer()
def patch_mosaic(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    patches = run.cpu(args["tensor"])[0]  # (N, 3, P, P)
    N, _, P, _ = patches.shape
    side = int(math.isqrt(N))
    gap = max(1, P // 8)
    # One image with white gaps between patches: a single imshow instead of N subplots.
    mosaic = np.ones((side * (P + gap) - gap, side * (P + gap) - gap, 3))
    for n in range(N):
        row, col = divmod(n, side)
        mosaic[row * (P + gap): row * (P + gap) + P, col * (P + gap): col * (P + gap) + P] = _unnormalise(patches[n])
    fig, ax = plt.subplots(figsize=(7.5, 7.5))
    ax.imshow(mosaic, interpolation="nearest")
    ticks = [i * (P + gap) + P / 2 for i in range(side)]
    step = max(1, side // 14)
    ax.set_xticks(ticks[::step], [str(i) for i in range(side)][::step])
    ax.set_yticks(ticks[::step], [str(i * side) for i in range(side)][::step])
    ax.set_xlabel("column in the patch grid")
    ax.set_ylabel("index of the first patch in the row")
    _save(fig, path)


@drawer()
def pos_similarity(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    pos = run.parameter(args["parameter"])[0, 1:].float()  # (N, C): patch positions, [CLS] left out
    unit = pos / pos.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    sim = (unit @ unit.T).numpy()  # (N, N) cosine similarities
    N = sim.shape[0]
    side = int(math.isqrt(N))
    picks = sorted({0, side // 2, side - 1, (side // 2) * side + side // 2, N - side, N - 1})
    fig = plt.figure(figsize=(13, 5.2))
    ax = fig.add_subplot(1, 2, 1)
    im = ax.imshow(sim, cmap="viridis", vmin=-1, vmax=1)
    ax.set_title("cosine similarity, patch i vs patch j")
    ax.set_xlabel("patch j")
    ax.set_ylabel("patch i")
    fig.colorbar(im, ax=ax, fraction=0.04)
    for k, p in enumerate(picks):
        sub = fig.add_subplot(2, 6, 4 + k + (3 if k >= 3 else 0))
        sub.imshow(sim[p].reshape(side, side), cmap="viridis", vmin=-1, vmax=1)
        sub.plot(p % side, p // side, marker="s", color="red", markersize=3)
        sub.set_title(f"patch {p} (row {p // side}, col {p % side})", fontsize=7)
        sub.axis("off")
    _save(fig, path)


@drawer()
def cls_attention(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    probs = run.cpu(args["tensor"])[0].float()  # (h, N1, N1)
    cls_to_patches = probs[:, 0, 1:]  # (h, N): [CLS] query over patch keys
    heads, N = cls_to_patches.shape
    side = int(math.isqrt(N))
    image = _unnormalise(run.cpu(args["image_tensor"])[0])
    H, W = image.shape[:2]
    grid_rows, grid_cols = _grid(heads, 6)
    fig, axes = plt.subplots(grid_rows, grid_cols, figsize=(2.3 * grid_cols, 2.45 * grid_rows), squeeze=False)
    for index, ax in enumerate(axes.flat):
        ax.axis("off")
        if index >= heads:
            continue
        heat = cls_to_patches[index].reshape(1, 1, side, side)  # (N,) -> patch grid
        heat = torch.nn.functional.interpolate(heat, size=(H, W), mode="nearest")[0, 0].numpy()
        ax.imshow(image)
        ax.imshow(heat, cmap="inferno", alpha=0.6)
        ax.set_title(f"head {index + 1}: max {float(cls_to_patches[index].max()):.3f}", fontsize=7.5)
    _save(fig, path)


@drawer("class_names")
def top5(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    probs = run.cpu(args["tensor"])[0].float()
    values, indices = probs.topk(5)
    names = [run.inputs["class_names"][int(i)] for i in indices]
    fig, ax = plt.subplots(figsize=(7, 2.4))
    ax.barh(range(5), values.numpy(), color=["#3949ab"] + ["#9fa8da"] * 4)
    ax.set_yticks(range(5), [f"{plain(n)} (class {int(i)})" for n, i in zip(names, indices)])
    ax.invert_yaxis()
    for k, v in enumerate(values.tolist()):
        ax.text(v, k, f" {v:.4f}", va="center", fontsize=8)
    ax.set_xlim(0, max(float(values[0]) * 1.25, 1e-3))
    ax.set_xlabel("probability")
    _save(fig, path)


def draw(run: ModelRun, kind: str, args: dict[str, Any], path: Path) -> None:
    DRAWERS[kind](run, args, path)


_SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def content_key(run: ModelRun, kind: str, args: dict[str, Any]) -> str:
    """A digest of everything the figure is drawn from: same key, same picture."""
    digest = hashlib.sha256(_SOURCE_DIGEST.encode())
    digest.update(json.dumps([kind, args], sort_keys=True, ensure_ascii=False).encode())
    for key, value in sorted(args.items()):
        names = [value] if key.endswith("tensor") else value if key.endswith("tensors") else []
        for name in names:
            tensor = run.cpu(name)
            digest.update(f"{name}{tuple(tensor.shape)}{tensor.dtype}".encode() + tensor.contiguous().numpy().tobytes())
        if key == "parameter":
            digest.update(run.parameter(value).numpy().tobytes())
        if key in ("rows", "cols"):
            digest.update(json.dumps(run.inputs[value], ensure_ascii=False).encode())
    for name in INPUTS_USED[kind]:
        value = run.inputs[name]
        digest.update(value.tobytes() if hasattr(value, "tobytes") else json.dumps(value, sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()
