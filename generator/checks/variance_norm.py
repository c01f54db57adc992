"""A LayerNorm step's evidence from its recorded rows: what every correct LayerNorm gives, and the classic student bug
of dividing by the variance instead of the standard deviation (``(x − mean) / (var + ε)``, the square root left out).

Whatever its form (nn.LayerNorm, a class of one's own with the unbiased standard deviation, ε inside or outside the
root), a LayerNorm's output less its bias, divided by its gain, has each row centred (mean 0) with a standard deviation
of at most 1 (ε and Bessel's correction only take off it; a large ε, hard-coded in a forward, can take off much, so a
spread below 1 is evidence only where the variance form fits it exactly). The property is tested on the recorded tensor
with the module's own weights, and only on rows that are centred (an RMSNorm's rows are not: it is not held to it);
a standard deviation that is the same in every row is a gain no weight shows (a LayerNorm times a constant) and is no
evidence either. A class that never subtracts the mean (``weight * x / (std + eps) + bias``, henok3878's B3) is the
bug form "mean not subtracted", named only where no RMSNorm with the same weights (``x / √(mean(x²) + ε)``, a correct
member of the family: ``own_rms_norm``) fits as well."""

from __future__ import annotations

from typing import Any

import torch

from transformer_trace.checks.base import close, weight_and_bias
from transformer_trace.checks.evidence import BugForm, Fit, Property
from transformer_trace.sources import NotCheckable, TensorSource
from transformer_trace.tensors import fmt

SLACK = 0.01  # how far outside its bounds a row's standard deviation may fall (rounding, a float16 model)
CENTRED = 1e-3  # a row's mean, relative to its spread, below which it counts as centred


def _module_weights(check: Any, s: TensorSource) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """The check's norm module, its gain and its bias (zeros where it has none); NotCheckable without them."""
    module = s.module(check.module)
    weight, bias = weight_and_bias(module)
    return module, weight, torch.zeros_like(weight) if bias is None else bias


def rows_before_affine(got: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The recorded rows less the bias, divided by the gain (the features whose gain is about 0 left out)."""
    kept = weight.abs() > 1e-6
    return ((got - bias) / weight.where(kept, torch.ones_like(weight)))[..., kept]


def _standardised_rows(check: Any, s: TensorSource) -> str | None:
    module, weight, bias = _module_weights(check, s)
    got = s.t(check.out)
    if got.shape != check.normalised(s).shape or weight.shape[-1] != got.shape[-1]:
        return None
    rows = rows_before_affine(got, weight, bias)
    if rows.shape[-1] < 2:
        return None
    mean, std = rows.mean(-1), rows.std(-1, unbiased=False)
    spread = std > 1e-6  # rows zeroed after the norm (padding) say nothing of it
    if not bool(spread.any()):
        return None
    mean, std = mean[spread], std[spread]
    if float((mean.abs() / std.clamp_min(1e-12)).max()) > CENTRED:
        return None  # rows not centred: not a LayerNorm by these weights (an RMSNorm, another step): not tested here
    if float(std.max() - std.min()) <= SLACK * float(std.mean()):
        return None  # the same spread in every row: a gain of the whole step, which the module's weights do not show
    outside = std > 1 + SLACK  # ε and the unbiased estimate only take off; an ε of any size can take off much
    if not bool(outside.any()):
        return None
    called = getattr(module, "called", s.name(check.module))
    return (f"before its gain and bias your {called}'s rows (the recorded values less its bias, divided by its gain) "
            f"are centred but {int(outside.sum()):,} of {outside.numel():,} have a standard deviation above 1 (from "
            f"{fmt(float(std.min()), 4)} to {fmt(float(std.max()), 4)}), which no LayerNorm gives: ε and the unbiased "
            "estimate only make it less than 1")


STANDARDISED_ROWS = Property("a LayerNorm's rows have mean 0 and standard deviation 1", "the recorded rows less the "
                             "module's bias, divided by its gain: centred, with a standard deviation of at most 1",
                             _standardised_rows)


def _divided_by_variance(check: Any, s: TensorSource) -> Fit | None:
    """The step recomputed as ``gain · (x − mean) / (var + ε) + bias`` with the module's own weights, the variance
    biased or unbiased."""
    try:
        module, weight, bias = _module_weights(check, s)
    except NotCheckable:
        return None  # from tensors alone a per-feature gain fits too much to name this
    got, total = s.t(check.out), check.normalised(s)
    eps = float(getattr(module, "eps", 1e-5))
    centred = total - total.mean(-1, keepdim=True)
    called = getattr(module, "called", s.name(check.module))
    tried = []
    for unbiased in (False, True):
        expected = weight * centred / (total.var(-1, unbiased=unbiased, keepdim=True) + eps) + bias
        fits, detail = close(got, expected, f"recomputed gain·(x − mean)/(var + ε) + bias with your {called}'s "
                             f"weights ({'unbiased' if unbiased else 'biased'} variance, ε = {eps:g})")
        if fits:
            spread = rows_before_affine(got, weight, bias).std(-1, unbiased=False)
            return Fit(True, f"your {called} divides by the variance, not the standard deviation (the square root "
                             f"left out): {detail}; before its gain and bias its rows have standard deviation 1/σ, "
                             f"from {fmt(float(spread.min()), 4)} to {fmt(float(spread.max()), 4)}, not 1")
        tried.append(detail)
    return Fit(False, tried[0])


DIVIDED_BY_VARIANCE = BugForm("divides by the variance, not the standard deviation", "the LayerNorm recomputed as "
                              "(x − mean)/(var + ε) with its own gain and bias", _divided_by_variance)


def rms_norm(total: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    """``gain · x / √(mean(x²) + ε) + bias`` over the last axis: an RMSNorm, no mean subtracted."""
    return weight * total * torch.rsqrt(total.pow(2).mean(-1, keepdim=True) + eps) + bias


def own_rms_norm(got: torch.Tensor, total: torch.Tensor, ln: Any, of: str) -> tuple[bool, str]:
    """``got`` as an RMSNorm of ``total`` (``gain · x / √(mean(x²) + ε) + bias``, no mean subtracted: a correct member
    of the family) with a user's own norm class's gain and bias, recomputed."""
    rms = rms_norm(total, ln.weight.detach().double().cpu(), ln.bias.detach().double().cpu(), ln.eps)
    return close(got, rms, f"recomputed an RMSNorm of {of}, x·rsqrt(mean(x²) + ε), with your {ln.called}'s gain and "
                 f"bias (ε = {ln.eps:g}; no mean subtracted: an RMSNorm, a correct member of the LayerNorm family)")


def _mean_not_subtracted(check: Any, s: TensorSource) -> Fit | None:
    """The step recomputed as ``gain · x / σ + bias``, the mean never subtracted (σ the rows' standard deviation,
    biased or unbiased, ε added to it or under the root), with the module's own weights. An RMSNorm (``x / √(mean(x²)
    + ε)``, a correct member of the family) is no such form: where it fits as well, the form is not named; and rows
    whose mean is about 0 tell the two apart from a correct LayerNorm no better than the correct form does."""
    try:
        module, weight, bias = _module_weights(check, s)
    except NotCheckable:
        return None  # from tensors alone a per-feature gain and bias fit too much to name this
    got, total = s.t(check.out), check.normalised(s)
    eps = float(getattr(module, "eps", 1e-5))
    called = getattr(module, "called", s.name(check.module))
    rms = rms_norm(total, weight, bias, eps)
    forms = {"σ + ε, σ unbiased": total.std(-1, keepdim=True) + eps,
             "σ + ε, σ biased": total.std(-1, unbiased=False, keepdim=True) + eps,
             "√(var + ε), var biased": torch.sqrt(total.var(-1, unbiased=False, keepdim=True) + eps),
             "√(var + ε), var unbiased": torch.sqrt(total.var(-1, keepdim=True) + eps)}
    tried = []
    for form, spread in forms.items():
        expected = weight * total / spread + bias
        fits, detail = close(got, expected, f"recomputed gain·x/({form}) + bias with your {called}'s weights, ε = "
                             f"{eps:g} (the mean not subtracted)")
        if fits:
            if close(got, rms, "")[0] or float((got - expected).abs().max()) >= float((got - rms).abs().max()):
                return Fit(False, f"{detail}; an RMSNorm with the same weights fits as well")
            means = rows_before_affine(got, weight, bias).mean(-1).abs()
            return Fit(True, f"your {called} does not subtract the mean: it divides x itself, not x − mean, by the "
                             f"rows' spread: {detail}; before its gain and bias its rows have mean up to "
                             f"{fmt(float(means.max()), 4)}, not 0")
        tried.append(detail)
    return Fit(False, tried[0])


MEAN_NOT_SUBTRACTED = BugForm("mean not subtracted", "the LayerNorm recomputed as x/σ (σ the rows' standard deviation: "
                              "x, not x − mean) with its own gain and bias, where no RMSNorm fits as well",
                              _mean_not_subtracted)
