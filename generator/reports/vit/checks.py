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
    # Redo the preprocessing by hand: bilinear resize of the loaded RGB image, /255, per-channel normalisation.
    resized = np.asarray(run.inputs["original_image"].resize((W, H), Image.BILINEAR), dtype=np.float64) / 255.0
    expected = (torch.from_numpy(resized).permute(2, 0, 1)[None] - mean) / std  # (H, W, 3) -> (1, 3, H, W)
    passed, detail = close(image, expected, "vs resize + /255 + the weights' normalisation redone by hand")
    pixels = image * std + mean
    return "is the loaded image, resized and normalised", passed, (
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
