"""Figures specific to the ViT report; listed in ``DRAWINGS`` (the report merges them with
transformer_trace.figures.DRAWINGS).

The image, its patches, the attention overlays and the five bars of top5 are drawn with Pillow
(transformer_trace.raster): the report needs no matplotlib.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from PIL import Image

from transformer_trace import raster
from transformer_trace.figures import Drawing, grid, visual_order
from transformer_trace.registry import Registry
from transformer_trace.run import ModelRun
from transformer_trace.sources import ParamRef, Ref


def _unnormalise(run: ModelRun, image: torch.Tensor) -> np.ndarray:
    """Undo the weights preset's normalisation: pixels in [0, 1], channels last."""
    mean = torch.tensor(run.inputs["mean"]).view(3, 1, 1)
    std = torch.tensor(run.inputs["std"]).view(3, 1, 1)
    return (image.float() * std + mean).clamp(0, 1).permute(1, 2, 0).numpy()  # (3, H, W) -> (H, W, 3)


def _patch_heat(values: torch.Tensor, side: int, H: int, W: int) -> np.ndarray:
    """One value per patch, (N,), spread over its pixels: (H, W), each patch a flat block (nearest upsampling)."""
    grid_values = values.reshape(side, side).numpy()  # (N,) -> (side, side), row-major like the patches
    return grid_values.repeat(H // side, axis=0).repeat(W // side, axis=1)


@dataclass(frozen=True, kw_only=True)
class InputImage(Drawing):
    uses = ("original_image", "image_mode", "crop_box")
    tensor: Ref

    def draw(self, run: ModelRun, path: Path) -> None:
        original = run.inputs["original_image"]
        shown = _unnormalise(run, run.cpu(self.tensor)[0])
        P = run.dims["P"]
        H, W = shown.shape[:2]
        side = 400  # pixels of each panel's longer side
        canvas = raster.Canvas()
        loaded = original.convert("RGB")
        scale = side / max(loaded.width, loaded.height)
        loaded = loaded.resize((max(1, round(loaded.width * scale)), max(1, round(loaded.height * scale))),
                               Image.Resampling.BILINEAR if scale > 1 else Image.Resampling.BOX)
        top, left = (side - loaded.height) // 2, (side - loaded.width) // 2
        canvas.image(left, top, loaded)
        title = f"as loaded: {original.width}×{original.height} {visual_order(run.inputs['image_mode'])}"
        if run.inputs["crop_box"]:  # the part the model sees: the centre crop after resizing the shorter side
            x0, y0, x1, y1 = (round(v * scale) for v in run.inputs["crop_box"])
            canvas.rect(left + x0, top + y0, left + x1 - 1, top + y1 - 1, outline=(255, 235, 59), width=2)
            title += "; centre crop outlined"
        canvas.text(side / 2, top - 6, title, size=10, ha="center", va="bottom")
        x = side + 40
        model_input = raster.fit(shown, side)
        canvas.image(x, 0, model_input)
        for k in range(W // P + 1):  # white lines between the patches
            px = min(round(k * P * side / W), side - 1)
            canvas.line(x + px, 0, x + px, model_input.height - 1, fill=(255, 255, 255))
        for k in range(H // P + 1):
            py = min(round(k * P * model_input.height / H), model_input.height - 1)
            canvas.line(x, py, x + side - 1, py, fill=(255, 255, 255))
        canvas.text(x + side / 2, -6, f"model input: {W}×{H}, {H // P}×{W // P} patches of {P}×{P}", size=10,
                    ha="center", va="bottom")
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class PatchMosaic(Drawing):
    tensor: Ref

    def draw(self, run: ModelRun, path: Path) -> None:
        patches = run.cpu(self.tensor)[0]  # (N, 3, P, P)
        N, _, P, _ = patches.shape
        side = int(math.isqrt(N))
        gap = max(1, P // 8)
        # One image with white gaps between patches.
        mosaic = np.ones((side * (P + gap) - gap, side * (P + gap) - gap, 3))
        # (N, 3, P, P) -> (3, N·P, P): one call
        pixels = _unnormalise(run, patches.permute(1, 0, 2, 3).reshape(3, N * P, P))
        for n in range(N):
            row, col = divmod(n, side)
            mosaic[row * (P + gap): row * (P + gap) + P,
                   col * (P + gap): col * (P + gap) + P] = pixels[n * P:(n + 1) * P]
        scale = max(1, 600 // mosaic.shape[0])  # whole pixels per mosaic pixel: every patch stays sharp
        pixels = (mosaic * 255).round().astype(np.uint8).repeat(scale, axis=0).repeat(scale, axis=1)
        canvas = raster.Canvas()
        canvas.image(0, 0, pixels)
        canvas.rect(-1, -1, pixels.shape[1], pixels.shape[0])
        centres = [(i * (P + gap) + P / 2) * scale for i in range(side)]
        step = max(1, side // 14)
        bottom = raster.ticks_below(canvas, pixels.shape[0], centres[::step], [str(i) for i in range(side)][::step])
        left = raster.ticks_left(canvas, 0, centres[::step], [str(i * side) for i in range(side)][::step])
        canvas.text(pixels.shape[1] / 2, bottom + 3, "column in the patch grid", ha="center")
        canvas.text(left - 6, pixels.shape[0] / 2, "index of the first patch in the row", ha="right", va="center",
                    rotation=90)
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class PosSimilarity(Drawing):
    parameter: ParamRef

    def draw(self, run: ModelRun, path: Path) -> None:
        pos = run.parameter(self.parameter)[0, 1:].float()  # (N, C): patch positions, [CLS] left out
        unit = pos / pos.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        sim = (unit @ unit.T).numpy()  # (N, N) cosine similarities
        N = sim.shape[0]
        side = int(math.isqrt(N))
        picks = sorted({0, side // 2, side - 1, (side // 2) * side + side // 2, N - side, N - 1})
        canvas = raster.Canvas()
        big = 420
        raster.heatmap(canvas, 0, 0, sim, big, big, "viridis", -1, 1, smooth=N > big)
        canvas.text(big / 2, -6, "cosine similarity, patch i vs patch j", size=10, ha="center", va="bottom")
        ticks = [t for t in raster.nice_ticks(0, N - 1, 8) if t == int(t)]
        centres = [(t + 0.5) * big / N for t in ticks]
        bottom = raster.ticks_below(canvas, big, centres, [str(int(t)) for t in ticks])
        left = raster.ticks_left(canvas, 0, centres, [str(int(t)) for t in ticks])
        canvas.text(big / 2, bottom + 3, "patch j", ha="center")
        canvas.text(left - 6, big / 2, "patch i", ha="right", va="center", rotation=90)
        raster.colorbar(canvas, big + 24, 0, big, "viridis", -1, 1, width=20)
        small, cell = 160, 160 / side
        for k, p in enumerate(picks):
            x, y = big + 130 + (k % 3) * (small + 40), (k // 3) * (small + 60) + 30
            raster.heatmap(canvas, x, y, sim[p].reshape(side, side), small, small, "viridis", -1, 1)
            mx, my = x + (p % side + 0.5) * cell, y + (p // side + 0.5) * cell  # the patch itself: a red square
            canvas.rect(round(mx - 2), round(my - 2), round(mx + 2), round(my + 2), outline=(255, 0, 0),
                        fill=(255, 0, 0))
            canvas.text(x + small / 2, y - 5, f"patch {p} (row {p // side}, col {p % side})", size=7, ha="center",
                        va="bottom")
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class ClsAttention(Drawing):
    tensor: Ref
    image_tensor: Ref

    def draw(self, run: ModelRun, path: Path) -> None:
        probs = run.cpu(self.tensor)[0].float()  # (h, N1, N1)
        cls_to_patches = probs[:, 0, 1:]  # (h, N): [CLS] query over patch keys
        heads, N = cls_to_patches.shape
        side = int(math.isqrt(N))
        image = _unnormalise(run, run.cpu(self.image_tensor)[0])
        H, W = image.shape[:2]
        grid_rows, grid_cols = grid(heads, 6)
        size = 168
        canvas = raster.Canvas()
        for index in range(heads):
            r, c = divmod(index, grid_cols)
            x, y = c * (size + 34), r * (size + 60)
            heat = _patch_heat(cls_to_patches[index], side, H, W)
            canvas.image(x, y, raster.overlay(image, heat, "inferno", 0.6, size))
            canvas.text(x + size / 2, y - 6, f"head {index + 1}: max {float(cls_to_patches[index].max()):.3f}",
                        size=7.5,
                        ha="center", va="bottom")
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class Top5(Drawing):
    uses = ("class_names",)
    tensor: Ref

    def draw(self, run: ModelRun, path: Path) -> None:
        probs = run.cpu(self.tensor)[0].float()
        values, indices = probs.topk(5)
        names = [run.inputs["class_names"][int(i)] for i in indices]
        xmax = max(float(values[0]) * 1.25, 1e-3)
        width, pitch = 560, 30
        canvas = raster.Canvas()
        _, _, _, bottom = raster.hbars(canvas, 0, 0, width, values.tolist(),
                                       [f"{visual_order(n)} (class {int(i)})" for n, i in zip(names, indices)],
                                       [(0x39, 0x49, 0xAB)] + [(0x9F, 0xA8, 0xDA)] * 4, xmax, pitch)
        for k, v in enumerate(values.tolist()):
            canvas.text(v / xmax * width + 3, (k + 0.5) * pitch, f" {v:.4f}", size=8, va="center")
        canvas.text(width / 2, bottom + 3, "probability", ha="center")
        canvas.save(path)


@dataclass(frozen=True, kw_only=True)
class Rollout(Drawing):
    """[CLS] rollout over the image beside the last block's raw [CLS] attention (mean over heads)."""

    uses = ("rollout",)
    image_tensor: Ref
    tensor: Ref

    def draw(self, run: ModelRun, path: Path) -> None:
        image = _unnormalise(run, run.cpu(self.image_tensor)[0])
        H, W = image.shape[:2]
        raw = run.cpu(self.tensor)[0].float().mean(dim=0)[0, 1:]  # (h, N1, N1) -> [CLS] row over the N patches
        rolled = run.inputs["rollout"][0, 0, 1:].float()  # (N,)
        side = int(math.isqrt(raw.numel()))
        size = 290
        canvas = raster.Canvas()
        canvas.image(0, 0, raster.fit(image, size))
        canvas.text(size / 2, -6, "model input", size=10, ha="center", va="bottom")
        x = size + 30
        for values, title in ((raw, "last block's raw [CLS] attention\n(mean over heads)"),
                              (rolled, "[CLS] attention rollout\nthrough every block")):
            heat = _patch_heat(values, side, H, W)
            canvas.image(x, 0, raster.overlay(image, heat, "inferno", 0.6, size))
            canvas.text(x + size / 2, -6, title, size=10, ha="center", va="bottom")
            raster.colorbar(canvas, x + size + 12, 0, size, "inferno", float(heat.min()), float(heat.max()), alpha=0.6)
            x += size + 110
        canvas.save(path)


DRAWINGS: Registry[type[Drawing]] = Registry("drawing", [
    (cls.key(), cls) for cls in (InputImage, PatchMosaic, PosSimilarity, ClsAttention, Top5, Rollout)])
