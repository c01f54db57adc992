"""LayerScale (CaiT, DINOv2, timm's ``ls1``/``ls2``): a residual sum whose sublayer outputs are each multiplied by a
learned per-channel gain before they join the stream, ``x + gamma1 * attn(norm1(x))``. A correct form of the residual
sum that differs from the plain one by a parameter, so the check fits the parameter (issue 40, point 2): the stream,
the first operand, is added as it is, and every other operand's gain is fitted per channel by least squares over
every position; the form holds where the fitted sum equals the recorded one. A dropped residual or an operand added
twice is no LayerScale: the stream's coefficient stays 1, and the remaining difference is no per-channel multiple of
the sublayer outputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.sources import Ref, TensorSource
from transformer_trace.tensors import fmt

# positions per fitted gain below which a fit proves nothing (a gain per channel and operand fits any few rows)
ROWS_PER_GAIN = 4
# standard errors within which the fitted gains' mean offset from a whole number is that whole number's rounding noise
WHOLE_NOISE = 4.0


@dataclass(frozen=True)
class LayerScaleFit:
    """The per-channel gains fitted, one row per scaled operand, and whether the sum with them is the recorded one."""

    holds: bool
    gains: torch.Tensor
    detail: str

    def claim(self, names: Sequence[str]) -> str:
        parts = ", ".join(f"{name} × a gain per channel (fitted: mean {fmt(float(gain.mean()))})"
                          for name, gain in zip(names, self.gains))
        return f"the operands add up to the residual sum with LayerScale: the stream + {parts}"



def layer_scaled_sum(out: torch.Tensor, stream: torch.Tensor, scaled: Sequence[torch.Tensor]) -> LayerScaleFit | None:
    """``out`` as ``stream + Σ gain_i ⊙ scaled_i`` with one gain per channel (the last axis) and operand, fitted by
    least squares; None where the tensors cannot tell (shapes that differ, or too few positions per gain)."""
    if not scaled or any(t.shape != out.shape for t in (stream, *scaled)) or out.dim() < 2:
        return None
    if any(t is u or torch.equal(t, u) for i, t in enumerate((stream, *scaled)) for u in scaled[i:] if t is not u):
        return None  # one tensor twice (an input read in another's place): its coefficients are not one gain each
    channels = out.shape[-1]
    rows = out.numel() // channels
    if rows < ROWS_PER_GAIN * len(scaled):
        return None
    target = (out.double() - stream.double()).reshape(rows, channels).T  # (channels, rows)
    design = torch.stack([t.double().reshape(rows, channels).T for t in scaled], dim=-1)  # (channels, rows, k)
    if not bool(torch.isfinite(target).all() and torch.isfinite(design).all()):
        return None
    gains = torch.linalg.lstsq(design, target.unsqueeze(-1)).solution.squeeze(-1)  # (channels, k)
    if any(_uniform_whole(gain) for gain in gains.T):
        return None  # an operand left out (0) or counted again (2): the plain sum's bug forms, never a learned gain
    fitted = stream.double() + sum(gain * t.double() for gain, t in zip(gains.T, scaled))
    holds, detail = close(out.double(), fitted, "the stream + each sublayer output × its fitted per-channel gain "
                                                "(LayerScale) vs the recorded sum")
    return LayerScaleFit(holds, gains.T.contiguous(), detail)


def _uniform_whole(gain: torch.Tensor) -> bool:
    """Every channel's gain the same whole number other than 1 (0, 2, -1 …), as far as the data tell: the gains' mean
    offset from it is within the rounding noise of their spread. A learned gain near a whole number is not one: DeiT
    III's and CaiT's LayerScale starts at 1e-4 in every channel, which rounds to 0 but stands far outside the noise
    of gains fitted to a term that is really absent."""
    whole = gain.round()
    if not bool((gain - whole).abs().max() < 1e-3 and (whole == whole[0]).all() and whole[0] != 1):
        return False
    offset = (gain - whole).double()
    if offset.numel() < 2:
        return True
    standard_error = float(offset.std()) / offset.numel() ** 0.5
    return abs(float(offset.mean())) <= WHOLE_NOISE * standard_error + 1e-9


def scaled_residual(s: TensorSource, out: Ref, operands: Sequence[Ref]) -> tuple[str, bool, str] | None:
    """A residual sum's verdict where it holds as LayerScale (the first operand the stream, the others scaled), else
    None: the plain sum's verdict stands."""
    if len(operands) < 2:
        return None
    fit = layer_scaled_sum(s.t(out), s.t(operands[0]), [s.t(ref) for ref in operands[1:]])
    if fit is None or not fit.holds:
        return None
    return fit.claim([s.name(ref) for ref in operands[1:]]), True, fit.detail


def _stream_left_out(check: Any, s: TensorSource) -> Fit | None:
    """The residual dropped under LayerScale (``x = ls1(attn(norm1(x)))``): the recorded sum is the scaled sublayer
    outputs alone, the stream (the first operand) left out."""
    operands: tuple[Ref, ...] = tuple(getattr(check, "operands", ()))
    if len(operands) < 2 or not all(s.has(ref) for ref in operands):
        return None
    got = s.t(check.out)
    fit = layer_scaled_sum(got, torch.zeros_like(got), [s.t(ref) for ref in operands[1:]])
    if fit is None:
        return None
    if not fit.holds:
        return Fit(False, "the scaled sublayer outputs alone (LayerScale without the stream) do not fit")
    scaled = ", ".join(s.name(ref) for ref in operands[1:])
    if bool(((fit.gains - 1).abs() < 1e-3).all()):  # gain 1 everywhere: the plain sum without its stream, no LayerScale
        alone = torch.stack([s.t(ref) for ref in operands[1:]]).sum(0)
        plain = close(got, alone, "the sublayer output alone vs the recorded sum")[1]
        return Fit(True, f"your {s.name(check.out)} leaves out {s.name(operands[0])} (without it: {scaled} alone; "
                         f"{plain})")
    return Fit(True, f"your {s.name(check.out)} leaves out {s.name(operands[0])} (without it: {scaled} × a gain per "
                     f"channel each, LayerScale; {fit.detail})")


def stream_left_out(name: str) -> BugForm:
    """The bug form "residual dropped" of a sum whose sublayer outputs carry LayerScale gains."""
    return BugForm(name, "the sublayer outputs, each times a fitted per-channel gain, without the stream",
                   _stream_left_out)
