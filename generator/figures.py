"""Figures for the report pages, drawn with matplotlib from the captured tensors.

Each drawing function takes the run, the catalogue's figure arguments and a target
path; files are PNG without timestamps, so the same tensors give the same bytes.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import arabic_reshaper
import matplotlib
from bidi import get_display

matplotlib.use("Agg")
# A glyph no installed font has is drawn as a box; matplotlib's warning per glyph would echo user text to the terminal.
warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from (current )?font", category=UserWarning)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from matplotlib import font_manager  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from PIL import Image  # noqa: E402

from generator.run import ModelRun  # noqa: E402

DPI = 110
PNG_METADATA = {"Software": None}  # no version stamp: byte-identical output across runs
# Latin/Greek/Hebrew/Arabic, CJK, emoji; only those installed (scripts/install-chromium.sh adds the last two),
# so a machine without them gets boxes for those glyphs rather than a warning per figure.
_INSTALLED = {font.name for font in font_manager.fontManager.ttflist}
FONT_FALLBACK = [name for name in ("DejaVu Sans", "Noto Sans CJK SC", "Symbola") if name in _INSTALLED] or ["DejaVu Sans"]

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


def save(fig: plt.Figure, path: Path) -> None:
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


def axis_labels(run: ModelRun, key: str | None, n: int) -> list[str]:
    if key is None:
        return [str(i) for i in range(n)]
    return [plain(w) for w in run.inputs[key]][:n]


def as_numpy(run: ModelRun, name: str) -> np.ndarray:
    return run.cpu(name).float().numpy()


def grid(n: int, max_cols: int = 4) -> tuple[int, int]:
    cols = min(n, max_cols)
    return math.ceil(n / cols), cols


# ----------------------------------------------------------------------------- drawings any report can use


@drawer()
def matrix(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    data = as_numpy(run, args["tensor"])
    data = data.reshape(-1, data.shape[-1])  # (rows, features)
    cols = min(args.get("max_cols", 64), data.shape[1])
    data = data[:, :cols]
    rows = data.shape[0]
    fig, ax = plt.subplots(figsize=(min(2 + cols * 0.09, 14), min(1.2 + rows * 0.32, 9)))
    limit = float(np.abs(data).max()) or 1.0
    im = ax.imshow(data, aspect="auto", cmap=args.get("cmap", "viridis"), vmin=-limit, vmax=limit, interpolation="nearest")
    if "rows" in args and rows <= 40:
        ax.set_yticks(range(rows), axis_labels(run, args["rows"], rows))
    ax.set_xlabel(args.get("xlabel", "feature") + f" (0–{cols - 1})")
    if "ylabel" in args:
        ax.set_ylabel(args["ylabel"])
    fig.colorbar(im, ax=ax, fraction=0.025)
    save(fig, path)


@drawer()
def positional(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    before, after = (as_numpy(run, name)[0] for name in args["tensors"])
    added = after - before
    labels = axis_labels(run, args["rows"], added.shape[0])
    fig, axes = plt.subplots(1, 2, figsize=(12, min(1.6 + 0.3 * added.shape[0], 9)), sharey=True)
    for ax, data, title in zip(axes, (added, after), ("added positional encoding", "embedding + position")):
        im = ax.imshow(data, aspect="auto", cmap="RdBu_r", vmin=-np.abs(data).max(), vmax=np.abs(data).max(), interpolation="nearest")
        ax.set_title(title)
        ax.set_xlabel("feature")
        fig.colorbar(im, ax=ax, fraction=0.03)
    if len(labels) <= 40:
        axes[0].set_yticks(range(len(labels)), [f"{i}: {w}" for i, w in enumerate(labels)])
    else:
        sparse_ticks(axes[0], labels, "y", most=30)
    save(fig, path)


@drawer()
def attention_heads(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    weights = as_numpy(run, args["tensor"])[0]  # (h, rows, cols)
    heads, n_rows, n_cols = weights.shape
    grid_rows, grid_cols = grid(heads, 2 if heads <= 4 else 4)
    cell = 3.4 if n_cols <= 16 else 3.0
    fig, axes = plt.subplots(grid_rows, grid_cols, figsize=(cell * grid_cols + 1, cell * grid_rows + 0.4), squeeze=False)
    finite = weights[np.isfinite(weights)]
    diverging = finite.min() < 0
    many = n_cols > 64
    # With hundreds of tokens a few large weights would wash everything else out: clip the scale at the 99.5th percentile.
    top = float(np.percentile(np.abs(finite), 99.5)) if many else float(np.abs(finite).max())
    vmin, vmax = (-top, top) if diverging else (0.0, max(top, 1e-9))
    labelled = n_rows <= LABELLED_CELLS and n_cols <= LABELLED_CELLS
    for index, ax in enumerate(axes.flat):
        if index >= heads:
            ax.axis("off")
            continue
        im = ax.imshow(weights[index], cmap=args.get("cmap", "viridis"), vmin=vmin, vmax=vmax,
                       interpolation="antialiased" if many else "nearest")  # many tokens: average, don't skip, when shrinking
        ax.set_title(f"head {index + 1}")
        if labelled:
            ax.set_xticks(range(n_cols), axis_labels(run, args.get("cols"), n_cols), rotation=60, ha="right")
            ax.set_yticks(range(n_rows), axis_labels(run, args.get("rows"), n_rows))
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
    save(fig, path)


LABELLED_CELLS = 24  # up to this many positions per axis, every cell is labelled; beyond, the figure keeps its size


def sparse_ticks(ax: plt.Axes, labels: list[str], axis: str, most: int = 16) -> None:
    """Label at most ``most`` evenly spaced positions (their index and word), so long sequences stay legible."""
    n = len(labels)
    step = max(1, math.ceil(n / most))
    positions = list(range(0, n, step))
    texts = [f"{i}: {labels[i]}" for i in positions]
    if axis == "x":
        ax.set_xticks(positions, texts, rotation=60, ha="right")
    else:
        ax.set_yticks(positions, texts)


@drawer()
def mask(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    """A causal mask in either convention: additive (0 allowed, −inf blocked) or boolean (True allowed)."""
    m = run.cpu(args["tensor"])[0, 0]  # (T, T)
    boolean = m.dtype == torch.bool
    blocked = ~m.numpy() if boolean else np.isinf(m.float().numpy())
    T = blocked.shape[0]
    labels = axis_labels(run, args["rows"], T)
    side = min(T, LABELLED_CELLS)
    fig, ax = plt.subplots(figsize=(1.5 + 0.55 * side, 1.2 + 0.5 * side))
    ax.imshow(blocked, cmap=ListedColormap(["white", "#9e9e9e"]), vmin=0, vmax=1, interpolation="nearest")
    allowed_text, blocked_text = ("✓", "") if boolean else ("0", "−∞")
    if T <= LABELLED_CELLS:
        for (i, j), is_blocked in np.ndenumerate(blocked):
            ax.text(j, i, blocked_text if is_blocked else allowed_text, ha="center", va="center")
        ax.set_xticks(range(T), [f"{i}: {w}" for i, w in enumerate(labels)], rotation=60, ha="right")
        ax.set_yticks(range(T), [f"{i}: {w}" for i, w in enumerate(labels)])
    else:  # hundreds of positions: the triangle itself is the message
        sparse_ticks(ax, labels, "x")
        sparse_ticks(ax, labels, "y")
    ax.set_title(f"{int((~blocked).sum())} allowed (white), {int(blocked.sum())} blocked (grey) of {T}×{T}")
    ax.set_xlabel("key position: may it be read?")
    ax.set_ylabel("query position")
    save(fig, path)


def draw(run: ModelRun, kind: str, args: dict[str, Any], path: Path) -> None:
    DRAWERS[kind](run, args, path)


def _source_digest(kind: str) -> bytes:
    """This module's code and the code of the module that defines the drawer: a change to either redraws."""
    files = {Path(__file__), Path(inspect.getsourcefile(DRAWERS[kind]))}
    return b"".join(hashlib.sha256(path.read_bytes()).digest() for path in sorted(files))


def content_key(run: ModelRun, kind: str, args: dict[str, Any]) -> str:
    """A digest of everything the figure is drawn from: same key, same picture."""
    digest = hashlib.sha256(_source_digest(kind))
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
        if isinstance(value, torch.Tensor):
            value = value.contiguous().numpy()
        digest.update(value.tobytes() if hasattr(value, "tobytes") else json.dumps(value, sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()
