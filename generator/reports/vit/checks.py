"""Checks specific to the ViT report, listed in ``CHECKS`` (the report merges them with
transformer_trace.checks.CHECKS)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from transformer_trace.checks import THIS, Check, CheckResult, TraceUse, close, tolerance
from transformer_trace.checks.values import SameTensor
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.registry import Registry
from transformer_trace.sources import Ref, TensorSource
from transformer_trace.tensors import fmt


@dataclass(frozen=True, kw_only=True)
class NormalisedImage(Check):
    """``out`` is the loaded image resized (and centre-cropped) and normalised, redone by hand from the run's inputs."""
    CLAIM = "is the image resized and normalised"

    TRACE = TraceUse(model_image=True)

    out: Ref = THIS

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        return _normalised_image(s, self.out)


def _normalised_image(s: TensorSource, out: Ref) -> tuple[str, bool, str]:
    import numpy as np
    from PIL import Image

    image = s.t(out)  # (B, 3, H, W)
    H, W = image.shape[-2:]
    mean = torch.tensor(s.input("mean"), dtype=torch.float64).view(1, 3, 1, 1)  # the weights preset's normalisation
    std = torch.tensor(s.input("std"), dtype=torch.float64).view(1, 3, 1, 1)
    # Redo the preprocessing by hand: bilinear resize of the loaded RGB image (the whole image to W×H, or the shorter
    # side to `resize` and the centre W×H cropped), /255, per-channel normalisation.
    original, resize = s.input("original_image"), s.input("resize")
    if resize is None:
        prepared = original.resize((W, H), Image.Resampling.BILINEAR)
        how = "resize"
    else:
        w, h = original.size
        new = (resize, int(resize * h / w)) if w <= h else (int(resize * w / h), resize)
        left, top = round((new[0] - W) / 2), round((new[1] - H) / 2)
        prepared = original.resize(new, Image.Resampling.BILINEAR).crop((left, top, left + W, top + H))
        how = f"shorter side to {resize} + centre crop"
    resized = np.asarray(prepared, dtype=np.float64) / 255.0
    expected = (torch.from_numpy(resized).permute(2, 0, 1)[None] - mean) / std  # (H, W, 3) -> (1, 3, H, W)
    passed, detail = close(image, expected, f"vs {how} + /255 + the weights' normalisation redone by hand")
    pixels = image * std + mean
    return (
        "is the loaded image, " + ("resized" if resize is None else "resized and centre-cropped") + " and normalised",
        passed,
        (
            detail
            + f"; undoing the normalisation gives pixels in [{fmt(float(pixels.min()))}, {fmt(float(pixels.max()))}]"
        ),
    )


def _on_the_grid(patches: torch.Tensor, rows: int, cols: int, column_order: bool = False) -> torch.Tensor:
    """(B, N, Ch, P, Q) patches put back on a rows × cols grid -> (B, Ch, rows·P, cols·Q): taken row by row, or
    column by column (``column_order``)."""
    B, _, Ch, P, Q = patches.shape
    if column_order:
        grid = patches.reshape(B, cols, rows, Ch, P, Q).permute(0, 3, 2, 4, 1, 5)
    else:
        grid = patches.reshape(B, rows, cols, Ch, P, Q).permute(0, 3, 1, 4, 2, 5)
    return grid.reshape(B, Ch, rows * P, cols * Q)


def _grid_of(patches: torch.Tensor, image: torch.Tensor) -> tuple[int, int]:
    """The rows × cols grid the (B, N, Ch, P, Q) patches tile the (B, Ch, H, W) image in."""
    P, Q = patches.shape[-2:]
    rows, cols = image.shape[-2] // P, image.shape[-1] // Q
    if patches.dim() != 5 or rows * cols != patches.shape[1] or rows * P != image.shape[-2]:
        raise RuntimeError(f"the patches {tuple(patches.shape)} do not tile the image {tuple(image.shape)}")
    return rows, cols


def _pixel_order(check: PatchesReassemble, s: TensorSource) -> Fit | None:
    """The patches hold the image's pixels, read in another order: each patch transposed (its rows and columns
    swapped), or the patches taken column by column."""
    patches, image = s.t(check.out), s.t(check.image)
    rows, cols = _grid_of(patches, image)
    readings = {
        "each patch's pixels are read column by column (its rows and columns swapped: a transpose inside the patch)":
            _on_the_grid(patches.transpose(-1, -2), rows, cols) if patches.shape[-1] == patches.shape[-2] else None,
        "the patches are taken column by column ((w h) where (h w) belongs)":
            _on_the_grid(patches, rows, cols, column_order=True) if rows == cols else None,
    }
    tried = []
    for how, rebuilt in readings.items():
        if rebuilt is None:
            continue
        fits, detail = close(rebuilt, image, "read that way and put back on the grid vs the input image")
        if fits:
            return Fit(True, f"your patches ({s.name(check.out)}) are read in another pixel order: {how} ({detail})")
        tried.append(f"{how.split(' (')[0]}: {detail}")
    return Fit(False, "; ".join(tried)) if tried else None


@dataclass(frozen=True, kw_only=True)
class PatchesReassemble(Check):
    """Tensors only: the patches ``out`` (B, N, 3, P, P) put back on the grid are the ``image``."""
    CLAIM = "the patches put back on the grid are the image"

    BUG_FORMS = (BugForm("patches read in another pixel order", "the patches transposed, or taken column by column, "
                         "put back on the grid vs the image", _pixel_order),)

    out: Ref = THIS
    image: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        p = s.t(self.out)  # (B, N, 3, P, P)
        img = s.t(self.image)
        rows, cols = _grid_of(p, img)
        rebuilt = _on_the_grid(p, rows, cols)  # -> (B, 3, H, W)
        passed, detail = close(rebuilt, img, f"{p.shape[1]} patches of {p.shape[-2]}×{p.shape[-1]} put back on a "
                                             f"{rows}×{cols} grid vs the input image")
        return "patches re-assemble into the input image", passed, detail


@dataclass(frozen=True, kw_only=True)
class RolloutRows(Check):
    """The run's rollout (input "rollout") equals a float64 recomputation from every block's probabilities and its
    rows sum to 1.

    ``block_probs`` is the record name of a block's attention probabilities with ``{i}`` for the block index.
    """
    CLAIM = "the rollout equals its recomputation and its rows sum to 1"

    block_probs: str

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        return _rollout_rows(s, self.block_probs)


def _rollout_rows(s: TensorSource, block_probs: str) -> tuple[str, bool, str]:
    blocks = s.input("config").n_layers
    shown = s.input("rollout").double()  # (B, N1, N1), computed in float32 by the runner
    expected = torch.eye(shown.size(-1), dtype=torch.float64).expand_as(shown)
    for i in range(blocks):  # the recursion written out again, in float64, from the recorded probabilities
        mean = s.t(block_probs.replace("{i}", str(i))).mean(dim=1)  # (B, N1, N1)
        mixed = 0.5 * mean + 0.5 * torch.eye(mean.size(-1), dtype=torch.float64)
        expected = (mixed / mixed.sum(dim=-1, keepdim=True)) @ expected
    same, detail = close(shown, expected, f"rollout through {blocks} blocks vs a float64 recomputation")
    rows = shown.sum(dim=-1)
    row_error = float((rows - 1).abs().max())
    return "rows sum to 1 and equal a float64 recomputation", same and row_error <= tolerance(), (
        f"{detail}; every one of the {rows.numel()} rows sums to 1 within {row_error:.1e}"
    )


@dataclass(frozen=True, kw_only=True)
class Flattened(Check):
    """Tensors only: ``out`` is ``source`` flattened over its axes after the second."""
    CLAIM = "is its input flattened"

    out: Ref = THIS
    source: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        src = s.t(self.source)
        passed, detail = close(s.t(self.out), src.reshape(*src.shape[:2], -1), f"{s.name(self.source)} flattened over "
                                                                               "(3, P, P)")
        return "is the patches flattened (channel, row, column order)", passed, detail


@dataclass(frozen=True, kw_only=True)
class HandedOverOrEmbedding(SameTensor):
    """The first block's input is what the previous stage handed over (``SameTensor``: the tokens with their
    positions, or a LayerNorm of them). Where no snapshot shows the tokens with positions (a model without a position
    table: PVT and CvT place tokens by their convolutions), the block input is compared with the latest earlier step
    captured, the tokens with the class token, else the patch embeddings: equal, or a LayerNorm of them (PVT's patch
    embedding ends in one), it passes as handed over; else it stays not checkable (positions may have been added on a
    line nobody marked), never red."""

    OPTIONAL = (("tokens",), ("embed",))

    tokens: Ref | None = None  # the tokens with the class token (S06)
    embed: Ref | None = None  # the patch embeddings (S04)

    def inputs_read(self, s: TensorSource) -> tuple[Ref, ...]:
        return self.inputs() if not s.has(self.source) else tuple(ref for ref in self.inputs()
                                                                   if ref not in (self.tokens, self.embed))

    def run(self, s: TensorSource) -> CheckResult:
        plain = SameTensor(out=self.out, source=self.source, claim=self.claim, or_layer_norm=self.or_layer_norm,
                           derive_plain=self.derive_plain)
        if s.has(self.source):
            return plain.run(s)
        for earlier in (ref for ref in (self.tokens, self.embed) if ref is not None and s.has(ref)):
            result = replace(plain, source=earlier).run(s)
            if result.passed:
                return replace(result, detail=f"no snapshot shows {s.name(self.source)} (no position table): read as "
                                              f"{s.name(earlier)}, the latest earlier step; {result.detail}")
            break  # not what the latest earlier step shows: positions may have been added unmarked
        return plain.run(s)


CHECKS: Registry[type[Check]] = Registry("check", [(cls.key(), cls) for cls in (
    NormalisedImage, PatchesReassemble, RolloutRows, Flattened, HandedOverOrEmbedding,
)])
