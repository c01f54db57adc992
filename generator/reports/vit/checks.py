"""Checks specific to the ViT report; they register with the generic ones in generator.checks."""

from __future__ import annotations

import torch

from generator.checks import TensorName, check, close
from generator.run import ModelRun
from generator.tensors import fmt


@check
def normalised_image(run: ModelRun, out: TensorName) -> tuple[str, bool, str]:
    import numpy as np
    from PIL import Image

    image = run.t(out)  # (B, 3, H, W)
    H, W = image.shape[-2:]
    mean = torch.tensor(run.inputs["mean"], dtype=torch.float64).view(1, 3, 1, 1)  # the weights preset's normalisation
    std = torch.tensor(run.inputs["std"], dtype=torch.float64).view(1, 3, 1, 1)
    # Redo the preprocessing by hand: bilinear resize of the loaded RGB image (the whole image to W×H, or the shorter
    # side to `resize` and the centre W×H cropped), /255, per-channel normalisation.
    original, resize = run.inputs["original_image"], run.inputs["resize"]
    if resize is None:
        prepared = original.resize((W, H), Image.BILINEAR)
        how = "resize"
    else:
        w, h = original.size
        new = (resize, int(resize * h / w)) if w <= h else (int(resize * w / h), resize)
        left, top = round((new[0] - W) / 2), round((new[1] - H) / 2)
        prepared = original.resize(new, Image.BILINEAR).crop((left, top, left + W, top + H))
        how = f"shorter side to {resize} + centre crop"
    resized = np.asarray(prepared, dtype=np.float64) / 255.0
    expected = (torch.from_numpy(resized).permute(2, 0, 1)[None] - mean) / std  # (H, W, 3) -> (1, 3, H, W)
    passed, detail = close(image, expected, f"vs {how} + /255 + the weights' normalisation redone by hand")
    pixels = image * std + mean
    return "is the loaded image, " + ("resized" if resize is None else "resized and centre-cropped") + " and normalised", passed, (
        detail + f"; undoing the normalisation gives pixels in [{fmt(float(pixels.min()))}, {fmt(float(pixels.max()))}]"
    )


@check
def patches_reassemble(run: ModelRun, out: TensorName, image: TensorName) -> tuple[str, bool, str]:
    p = run.t(out)  # (B, N, 3, P, P)
    B, N, Ch, P, _ = p.shape
    img = run.t(image)
    side = img.shape[-1] // P
    rebuilt = p.view(B, side, side, Ch, P, P).permute(0, 3, 1, 4, 2, 5).reshape(B, Ch, side * P, side * P)  # -> (B, 3, H, W)
    passed, detail = close(rebuilt, img, f"{N} patches of {P}×{P} put back on a {side}×{side} grid vs the input image")
    return "patches re-assemble into the input image", passed, detail


@check
def tokens_concat(run: ModelRun, out: TensorName, cls: TensorName, patches: TensorName) -> tuple[str, bool, str]:
    expected = torch.cat([run.t(cls), run.t(patches)], dim=1)
    passed, detail = close(run.t(out), expected, "row 0 vs the class token, rows 1… vs the patch embeddings")
    return "row 0 is the class token, the rest are the patch embeddings", passed, detail


@check
def rollout_rows(run: ModelRun, block_probs: str) -> tuple[str, bool, str]:
    """``block_probs`` names every block's attention probabilities, with {i} for the block index."""
    blocks = run.inputs["config"].n_layers
    shown = run.inputs["rollout"].double()  # (B, N1, N1), computed in float32 by the runner
    expected = torch.eye(shown.size(-1), dtype=torch.float64).expand_as(shown)
    for i in range(blocks):  # the recursion written out again, in float64, from the recorded probabilities
        mean = run.t(block_probs.format(i=i)).mean(dim=1)  # (B, N1, N1)
        mixed = 0.5 * mean + 0.5 * torch.eye(mean.size(-1), dtype=torch.float64)
        expected = (mixed / mixed.sum(dim=-1, keepdim=True)) @ expected
    same, detail = close(shown, expected, f"rollout through {blocks} blocks vs a float64 recomputation")
    rows = shown.sum(dim=-1)
    row_error = float((rows - 1).abs().max())
    return "rows sum to 1 and equal a float64 recomputation", same and row_error <= 1e-4, (
        f"{detail}; every one of the {rows.numel()} rows sums to 1 within {row_error:.1e}"
    )


@check
def flattened(run: ModelRun, out: TensorName, source: TensorName) -> tuple[str, bool, str]:
    src = run.t(source)
    passed, detail = close(run.t(out), src.reshape(*src.shape[:2], -1), f"{run.name(source)} flattened over (3, P, P)")
    return "is the patches flattened (channel, row, column order)", passed, detail
