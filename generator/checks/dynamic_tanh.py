"""DynamicTanh (Zhu et al., 2025, "Transformers without Normalization"), read wherever a LayerNorm step is expected:
``gamma * tanh(alpha * x) + beta``, a learned scalar ``alpha`` and a gain and bias per feature, in place of every
LayerNorm. A correct family: recomputed with the module's own parameters where the trace has them, else ``alpha``
fitted from the tensors (the gain and bias per feature by least squares). Its bug form: ``alpha`` left out (the tanh of
the raw stream), told from the module's own parameters only (from tensors alone that is a DynamicTanh with alpha 1)."""

from __future__ import annotations

from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.sources import TensorSource

CLAIM = "equals DynamicTanh({of}): gamma · tanh(alpha · x) + beta in place of a LayerNorm"


def tanh_alpha(module: Any) -> torch.Tensor | None:
    """A rebuilt norm's learned scalar where it is a DynamicTanh (trace/reading/rebuilt.py), else None."""
    alpha = getattr(module, "tanh_alpha", None)
    return alpha.detach().double().cpu() if isinstance(alpha, torch.Tensor) else None


def _recomputed(module: Any, total: torch.Tensor, alpha: torch.Tensor | float) -> torch.Tensor:
    gain, bias = (module.weight.detach().double().cpu(), module.bias.detach().double().cpu())
    return gain * torch.tanh(alpha * total) + bias


def dynamic_tanh(got: torch.Tensor, total: torch.Tensor, module: Any, of: str) -> tuple[str, bool, str]:
    """``got`` as the DynamicTanh ``module`` (its own alpha, gamma and beta) of ``total``."""
    alpha = tanh_alpha(module)
    assert alpha is not None
    called = getattr(module, "called", "norm")
    passed, detail = close(got, _recomputed(module, total, alpha),
                           f"recomputed gamma·tanh(alpha·x) + beta with your {called}'s own parameters "
                           f"(alpha = {float(alpha.reshape(-1)[0]):.4g})")
    return CLAIM.format(of=of), passed, detail


def _affine_per_feature(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``y`` fitted as ``x``·gain + bias per feature (the last axis) by least squares."""
    xs, ys = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
    xm, ym = xs.mean(0), ys.mean(0)
    gain = ((xs - xm) * (ys - ym)).mean(0) / ((xs - xm) ** 2).mean(0).clamp_min(1e-12)
    return (xs * gain + (ym - gain * xm)).reshape(y.shape)


def fitted_dynamic_tanh(got: torch.Tensor, total: torch.Tensor, of: str) -> tuple[str, bool, str] | None:
    """``got`` as some DynamicTanh of ``total`` (no weights captured): alpha fitted over a log grid, then refined, the
    gain and bias per feature by least squares; None where none fits, or where a plain affine function of the input
    per feature fits already (a small alpha makes tanh a line: the step could be the input itself, a norm left out,
    and a fit would prove nothing)."""
    if got.shape != total.shape or close(got, _affine_per_feature(total, got), "")[0]:
        return None
    scale = float(total.abs().max().clamp_min(1e-12))

    def gap(alpha: float) -> float:
        return float((got - _affine_per_feature(torch.tanh(alpha * total), got)).abs().max())

    grid = [10 ** (k / 8) / scale for k in range(-16, 25)]  # alpha·max|x| from 0.01 to 1000
    best = min(grid, key=gap)
    low, high = best / 10 ** (1 / 8), best * 10 ** (1 / 8)
    for _ in range(40):  # golden-section search on the log of alpha
        a, b = low + 0.382 * (high - low), low + 0.618 * (high - low)
        low, high = (low, b) if gap(a) < gap(b) else (a, high)
    alpha = (low + high) / 2
    passed, detail = close(got, _affine_per_feature(torch.tanh(alpha * total), got),
                           f"DynamicTanh of {of}, gamma·tanh(alpha·x) + beta with alpha fitted ({alpha:.4g}) and the "
                           "gain and bias fitted per feature (no weights captured; an affine function of the input "
                           "alone does not fit it)")
    return (CLAIM.format(of=of), True, detail) if passed else None


def _alpha_left_out(check: Any, s: TensorSource) -> Fit | None:
    """The step as the module's DynamicTanh without its alpha: ``gamma * tanh(x) + beta`` (its own gamma and beta)."""
    module = s.module(check.module)
    alpha = tanh_alpha(module)
    if alpha is None or close(alpha, torch.ones_like(alpha), "")[0]:
        return None  # not a DynamicTanh, or one whose alpha is 1: leaving it out changes nothing
    called = getattr(module, "called", s.name(check.module))
    fits, detail = close(s.t(check.out), _recomputed(module, check.normalised(s), 1.0),
                         f"recomputed gamma·tanh(x) + beta with your {called}'s gamma and beta, no alpha")
    if fits:
        return Fit(True, f"your {called} leaves out its learned alpha (= {float(alpha.reshape(-1)[0]):.4g}): it "
                         f"takes the tanh of the raw stream ({detail})")
    return Fit(False, detail)


ALPHA_LEFT_OUT = BugForm("DynamicTanh without its alpha",
                         "the DynamicTanh recomputed with alpha = 1 (its own gamma and beta)", _alpha_left_out)
