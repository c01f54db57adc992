"""Figures specific to the ViT report; they register with the generic drawers in generator.figures."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from generator.figures import axis_labels, drawer, grid, plain, plt, save  # noqa: F401
from generator.run import ModelRun


def _unnormalise(run: ModelRun, image: torch.Tensor) -> np.ndarray:
    """Undo the weights preset's normalisation: pixels in [0, 1], channels last."""
    mean = torch.tensor(run.inputs["mean"]).view(3, 1, 1)
    std = torch.tensor(run.inputs["std"]).view(3, 1, 1)
    return (image.float() * std + mean).clamp(0, 1).permute(1, 2, 0).numpy()  # (3, H, W) -> (H, W, 3)


@drawer("original_image", "image_mode", "crop_box")
def input_image(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    original = run.inputs["original_image"]
    shown = _unnormalise(run, run.cpu(args["tensor"])[0])
    P = run.dims["P"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 5))
    axes[0].imshow(original)
    axes[0].set_title(f"as loaded: {original.width}×{original.height} {plain(run.inputs['image_mode'])}")
    if run.inputs["crop_box"]:  # the part the model sees: the centre crop after resizing the shorter side
        x0, y0, x1, y1 = run.inputs["crop_box"]
        axes[0].add_patch(plt.Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False, edgecolor="#ffeb3b", linewidth=2))
        axes[0].set_title(f"as loaded: {original.width}×{original.height} {plain(run.inputs['image_mode'])}; centre crop outlined")
    axes[1].imshow(shown)
    H, W = shown.shape[:2]
    for x in range(0, W + 1, P):
        axes[1].axvline(x - 0.5, color="white", linewidth=0.5)
    for y in range(0, H + 1, P):
        axes[1].axhline(y - 0.5, color="white", linewidth=0.5)
    axes[1].set_title(f"model input: {W}×{H}, {H // P}×{W // P} patches of {P}×{P}")
    for ax in axes:
        ax.axis("off")
    save(fig, path)


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
        mosaic[row * (P + gap): row * (P + gap) + P, col * (P + gap): col * (P + gap) + P] = _unnormalise(run, patches[n])
    fig, ax = plt.subplots(figsize=(7.5, 7.5))
    ax.imshow(mosaic, interpolation="nearest")
    ticks = [i * (P + gap) + P / 2 for i in range(side)]
    step = max(1, side // 14)
    ax.set_xticks(ticks[::step], [str(i) for i in range(side)][::step])
    ax.set_yticks(ticks[::step], [str(i * side) for i in range(side)][::step])
    ax.set_xlabel("column in the patch grid")
    ax.set_ylabel("index of the first patch in the row")
    save(fig, path)


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
    save(fig, path)


@drawer()
def cls_attention(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    probs = run.cpu(args["tensor"])[0].float()  # (h, N1, N1)
    cls_to_patches = probs[:, 0, 1:]  # (h, N): [CLS] query over patch keys
    heads, N = cls_to_patches.shape
    side = int(math.isqrt(N))
    image = _unnormalise(run, run.cpu(args["image_tensor"])[0])
    H, W = image.shape[:2]
    grid_rows, grid_cols = grid(heads, 6)
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
    save(fig, path)


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
    save(fig, path)


@drawer("rollout")
def rollout(run: ModelRun, args: dict[str, Any], path: Path) -> None:
    """[CLS] rollout over the image beside the last block's raw [CLS] attention (mean over heads)."""
    image = _unnormalise(run, run.cpu(args["image_tensor"])[0])
    H, W = image.shape[:2]
    raw = run.cpu(args["tensor"])[0].float().mean(dim=0)[0, 1:]  # (h, N1, N1) -> [CLS] row over the N patches
    rolled = run.inputs["rollout"][0, 0, 1:].float()  # (N,)
    side = int(math.isqrt(raw.numel()))
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.3))
    axes[0].imshow(image)
    axes[0].set_title("model input")
    for ax, values, title in ((axes[1], raw, "last block's raw [CLS] attention\n(mean over heads)"),
                              (axes[2], rolled, "[CLS] attention rollout\nthrough every block")):
        heat = torch.nn.functional.interpolate(values.reshape(1, 1, side, side), size=(H, W), mode="nearest")[0, 0].numpy()
        ax.imshow(image)
        shown = ax.imshow(heat, cmap="inferno", alpha=0.6)
        ax.set_title(title)
        fig.colorbar(shown, ax=ax, fraction=0.046)
    for ax in axes:
        ax.axis("off")
    save(fig, path)
