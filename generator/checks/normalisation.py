"""LayerNorm checks: recomputed with the model's weights, or, from tensors alone, with the gain and bias fitted per
feature (for the usual epsilons)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from transformer_trace.checks.base import (THIS, Check, TraceUse, UnfittableWeights, added, close, settings,
                                          weight_and_bias)
from transformer_trace.checks.dynamic_tanh import ALPHA_LEFT_OUT, dynamic_tanh, fitted_dynamic_tanh, tanh_alpha
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.residual_forms import scaled_residual, stream_left_out
from transformer_trace.checks.variance_norm import (DIVIDED_BY_VARIANCE, MEAN_NOT_SUBTRACTED, STANDARDISED_ROWS,
                                                   own_rms_norm, rows_before_affine)
from transformer_trace.sources import ModuleRef, NotCheckable, Ref, TensorSource
from transformer_trace.tensors import fmt
from transformer_trace.trace.child.protocol import ModuleKind


def _layer_norm(s: TensorSource, out: Ref | torch.Tensor, total: torch.Tensor, module: ModuleRef,
                of: str) -> tuple[str, bool, str]:
    """``out`` (a record, or rows of one) is the LayerNorm ``module`` of ``total``, recomputed with the model's
    weights; from tensors alone (a source without weights) with the per-feature gain and bias fitted by least squares,
    which passes only when every feature of ``out`` is one affine function of ``total`` normalised per position."""
    got = out if isinstance(out, torch.Tensor) else s.t(out)
    try:
        ln = s.module(module)
    except NotCheckable:
        return fitted_layer_norm(got, total, of, or_dynamic_tanh=True)
    if tanh_alpha(ln) is not None:  # a DynamicTanh in the LayerNorm's place: its own formula
        return dynamic_tanh(got, total, ln, of)
    weight, bias = weight_and_bias(ln)
    shape, eps = settings(ln, "normalized_shape", "eps")
    expected = F.layer_norm(total, shape, weight, bias, eps)
    passed, detail = close(got, expected, f"recomputed LayerNorm of {of} with {s.name(module)}'s weights")
    if getattr(ln, "own_code", False):  # a traced script's own LayerNorm class: checked against the formula
        passed, detail = _own_layer_norm(got, total, ln, of, (passed, detail))
    # what the recorded tensor shows, not the recomputation: a LayerNorm's rows before the affine step
    rows = rows_before_affine(got, weight, torch.zeros_like(weight) if bias is None else bias)
    detail += (f"; before the affine step your rows have mean {fmt(float(rows.mean(-1).abs().max()), 6)} (max |mean|) "
               f"and std {fmt(float(rows.std(-1, unbiased=False).mean()), 4)} (on average)")
    return f"equals LayerNorm({of})", passed, detail


def _own_layer_norm(got: torch.Tensor, total: torch.Tensor, ln: Any, of: str,
                    reference: tuple[bool, str]) -> tuple[bool, str]:
    """A user's own LayerNorm class (a trace's): the reference formula with its own gain and bias, or the Annotated
    Transformer's form (unbiased standard deviation, ε added to it), or an RMSNorm's, said when recognised."""
    passed, detail = reference
    detail = detail.replace("recomputed LayerNorm", f"recomputed nn.LayerNorm's formula (your {ln.called}'s gain "
                            f"and bias, ε = {ln.eps:g})", 1)
    if passed:
        return passed, detail
    weight, bias = ln.weight.detach().double().cpu(), ln.bias.detach().double().cpu()
    centred = total - total.mean(-1, keepdim=True)
    annotated = weight * centred / (total.std(-1, keepdim=True) + ln.eps) + bias
    same, more = close(got, annotated, f"recomputed the Annotated Transformer's LayerNorm of {of} (unbiased std, ε "
                       f"added to it; your {ln.called}'s gain and bias)")
    same, more = (same, more) if same else own_rms_norm(got, total, ln, of)  # an RMSNorm with a bias: correct too
    return (True, more) if same else (False, detail)


# The epsilons LayerNorms use (PyTorch's default; 1e-6 in torchvision's ViT and many ports; 1e-12 in BERT-style code):
# with inputs of small variance (a class token and small position embeddings) the epsilon shows in the output.


LAYER_NORM_EPSILONS = (1e-5, 1e-6, 1e-12)


def fitted_layer_norm(got: torch.Tensor, total: torch.Tensor, of: str,
                      or_dynamic_tanh: bool = False) -> tuple[str, bool, str]:
    """``got`` is some LayerNorm of ``total``: the gain and bias fitted per feature by least squares, for the usual
    epsilons (the first that fits is named when it is not PyTorch's default)."""
    if got.shape != total.shape:
        return f"equals LayerNorm({of})", False, f"shape {tuple(got.shape)} differs from {tuple(total.shape)}"
    if total.reshape(-1, total.shape[-1]).shape[0] < 3:
        positions = total.reshape(-1, total.shape[-1]).shape[0]
        plural = "s" if positions != 1 else ""
        raise UnfittableWeights("the LayerNorm's weights", f"{positions} position{plural}: a gain and a bias per "
                                "feature fit anything, and the tensors were captured without the weights")
    flat = got.reshape(-1, got.shape[-1])
    constant, spread = close(got, flat.mean(0).expand_as(flat).reshape(got.shape), "the recorded values vs one "
                             "constant per feature")
    if constant and (plain := _plain_layer_norm(got, total, of)) is not None:
        return plain  # flat, but the LayerNorm with gain 1 and bias 0: no gain was fitted to it
    if constant:  # a gain of about 0 fits any tensor this flat: no evidence of a LayerNorm (nor against one)
        return f"equals LayerNorm({of})", False, (f"{spread}: a LayerNorm with a fitted gain near 0 fits values this "
                                                   "flat, so a fit proves nothing")
    tried = []
    for eps in LAYER_NORM_EPSILONS:
        normed = F.layer_norm(total, total.shape[-1:], eps=eps)
        x, y = normed.reshape(-1, normed.shape[-1]), got.reshape(-1, got.shape[-1])  # (positions, C)
        xm, ym = x.mean(0), y.mean(0)
        gain = ((x - xm) * (y - ym)).mean(0) / ((x - xm) ** 2).mean(0).clamp_min(1e-12)
        bias = ym - gain * xm
        epsilon = "" if eps == LAYER_NORM_EPSILONS[0] else f", ε = {eps:g}"
        tried.append(close(got, normed * gain + bias, f"LayerNorm of {of} with the gain and bias fitted per feature "
                           f"(no weights captured; fitted gain {float(gain.mean()):.3f} on average{epsilon})"))
        if tried[-1][0]:
            break
    if not tried[-1][0] and (rms := _fitted_rms_norm(got, total, of)) is not None:
        return rms
    # a DynamicTanh fitted from tensors alone fits any tanh of ``total``: a correct form of a LayerNorm step only,
    # never evidence that a tensor is a norm of another (a tanh after an MLP read as a norm of its output)
    if or_dynamic_tanh and not tried[-1][0] and (tanh := fitted_dynamic_tanh(got, total, of)) is not None:
        return tanh
    passed, detail = tried[-1] if tried[-1][0] else tried[0]
    return f"equals LayerNorm({of})", passed, detail


def layer_norm_of_sum(s: TensorSource, out: Ref, operands: Sequence[Ref], of: str,
                      module: ModuleRef | None = None) -> tuple[str, bool, str]:
    """``out`` as a LayerNorm of the sum of ``operands`` (post-norm): ``module``'s, recomputed with its weights where
    the source has them; with no module, or no weights, the gain and bias fitted per feature. Each caller says what
    the edges mean to it: a shape that differs fails here, and too few positions raise UnfittableWeights."""
    total = added(s.t(ref) for ref in operands)
    if module is None:
        return fitted_layer_norm(s.t(out), total, of)
    return _layer_norm(s, out, total, module, of)


def _plain_layer_norm(got: torch.Tensor, total: torch.Tensor, of: str) -> tuple[str, bool, str] | None:
    """``got`` as the LayerNorm of ``total`` with gain 1 and bias 0 (for the usual epsilons), or None."""
    for eps in LAYER_NORM_EPSILONS:
        epsilon = "" if eps == LAYER_NORM_EPSILONS[0] else f", ε = {eps:g}"
        passed, detail = close(got, F.layer_norm(total, total.shape[-1:], eps=eps),
                               f"LayerNorm of {of} (gain 1, bias 0{epsilon})")
        if passed:
            return f"equals LayerNorm({of})", True, detail
    return None


# The epsilons RMSNorms use (nn.RMSNorm's default, None, is the dtype's machine epsilon; Llama code uses 1e-5 or 1e-6)
RMS_NORM_EPSILONS = (1e-5, 1e-6, 1e-8, float(torch.finfo(torch.float32).eps))


def _fitted_rms_norm(got: torch.Tensor, total: torch.Tensor, of: str) -> tuple[str, bool, str] | None:
    """``got`` as an RMSNorm of ``total`` (``x · rsqrt(mean(x²) + ε) · gain``: no centring, no bias), where the
    catalogue's LayerNorm does not fit: the gain fitted per feature by least squares through 0, for the usual epsilons;
    the norm's kind is told by its formula, whatever its class is called. None where no epsilon fits."""
    for eps in RMS_NORM_EPSILONS:
        normed = total * torch.rsqrt(total.pow(2).mean(-1, keepdim=True) + eps)
        x, y = normed.reshape(-1, normed.shape[-1]), got.reshape(-1, got.shape[-1])
        gain = (x * y).sum(0) / (x * x).sum(0).clamp_min(1e-12)
        passed, detail = close(got, normed * gain, f"RMSNorm of {of}, x·rsqrt(mean(x²) + ε)·gain, with the gain "
                               f"fitted per feature (no weights captured; fitted gain {float(gain.mean()):.3f} on "
                               f"average, ε = {eps:g}; no mean subtracted, no bias)")
        if passed:
            return f"equals RMSNorm({of}): the LayerNorm step is an RMSNorm", True, (
                f"{detail}; LayerNorm (mean subtracted, gain and bias fitted) does not fit it")
    return None


def _gain_and_bias_swapped(check: Any, s: TensorSource) -> Fit | None:
    """The step as a LayerNorm whose formula multiplies by the bias and adds the gain (``beta * x̂ + gamma``, a
    LayerNorm class of one's own), recomputed with the module's own weights, in PyTorch's form and the Annotated
    Transformer's (unbiased standard deviation, ε added to it). Needs the weights: from tensors alone any affine
    step fits."""
    ln = s.module(check.module)
    weight, bias = weight_and_bias(ln)
    if bias is None or bias.shape != weight.shape:
        return None
    total, got = check.normalised(s), s.t(check.out)
    shape, eps = settings(ln, "normalized_shape", "eps")
    centred = total - total.mean(-1, keepdim=True)
    annotated = bias * centred / (total.std(-1, keepdim=True) + eps) + weight
    forms = {"": F.layer_norm(total, tuple(shape), bias, weight, eps),
             ", in the Annotated Transformer's form": annotated}
    called = getattr(ln, "called", s.name(check.module))
    tried = []
    for form, expected in forms.items():
        fits, detail = close(got, expected, f"recomputed bias·x̂ + gain{form} with your {called}'s weights")
        if fits:
            return Fit(True, f"your {called} swaps its gain and bias: it multiplies by the bias and adds the gain "
                             f"({detail})")
        tried.append(detail)
    return Fit(False, tried[0])


GAIN_AND_BIAS_SWAPPED = BugForm("gain and bias swapped", "the LayerNorm recomputed with its bias as the gain and its "
                                "gain as the bias (its own weights)", _gain_and_bias_swapped)


def _normalised_over(total: torch.Tensor, mean_axes: tuple[int, ...], var_axes: tuple[int, ...],
                     eps: float) -> torch.Tensor:
    """``total`` less its mean over ``mean_axes``, divided by the root of its variance over ``var_axes`` (+ ε)."""
    centred = total - total.mean(mean_axes, keepdim=True)
    return centred / torch.sqrt(total.var(var_axes, keepdim=True, unbiased=False) + eps)


def _per_feature_affine(x: torch.Tensor, y: torch.Tensor, gain_only: bool = False) -> torch.Tensor:
    """``y`` (positions, C) fitted as ``x``·gain + bias per feature by least squares (or the gain alone)."""
    xm, ym = x.mean(0), y.mean(0)
    gain = ((x - xm) * (y - ym)).mean(0) / ((x - xm) ** 2).mean(0).clamp_min(1e-12)
    return gain if gain_only else x * gain + (ym - gain * xm)


def _axes_named(axes: tuple[int, ...], dims: int) -> str:
    names = ["the last axis (the features)" if axis == dims - 1 else f"axis {axis}" for axis in axes]
    return " and ".join(names)


def _wrong_axis(check: Any, s: TensorSource) -> Fit | None:
    """The step as a LayerNorm whose mean or variance (or both) was taken over another axis or set of axes of its
    input (the token axis, say, ``x.mean(1)``), each form's gain and bias fitted per feature by least squares as the
    fitted LayerNorm is: the form that fits best, where it fits."""
    total, got = check.normalised(s), s.t(check.out)
    if got.shape != total.shape or total.dim() < 2:
        return None
    dims, features = total.dim(), total.shape[-1]
    subsets = [axes for n in range(1, dims + 1) for axes in itertools.combinations(range(dims), n)]
    best: tuple[float, str] | None = None
    y = got.reshape(-1, features)
    if close(y, y.mean(0).expand_as(y), "")[0]:
        return None  # the step constant per feature: every form fits it with a gain of 0, so none is evidence
    for mean_axes, var_axes in itertools.product(subsets, subsets):
        if mean_axes == var_axes == (dims - 1,):
            continue  # the correct form
        x = _normalised_over(total, mean_axes, var_axes, LAYER_NORM_EPSILONS[0]).reshape(-1, features)
        if close(x, _per_feature_affine(total.reshape(-1, features), x), "")[0]:
            continue  # statistics constant per feature (over every other axis): the input itself, gain and bias fitted
        fitted = _per_feature_affine(x, y).reshape(got.shape)
        gain = _per_feature_affine(x, y, gain_only=True)
        where = (f"the mean over {_axes_named(mean_axes, dims)}, the variance over {_axes_named(var_axes, dims)}")
        fits, detail = close(got, fitted, f"the input normalised with {where}, gain and bias fitted per feature "
                             f"(fitted gain {float(gain.mean()):.3f} on average)")
        if fits:
            return Fit(True, f"your LayerNorm normalises over the wrong axis: {where}, not the features alone "
                             f"({detail})")
        gap = float((got - fitted).abs().max())
        if best is None or gap < best[0]:
            best = (gap, detail)
    return Fit(False, best[1]) if best else None


WRONG_AXIS = BugForm("normalised over the wrong axis", "the LayerNorm with its mean or variance taken over each other "
                     "axis or set of axes of its input (gain and bias fitted per feature)", _wrong_axis)


@dataclass(frozen=True, kw_only=True)
class LayerNormOf(Check):
    """``out`` is the LayerNorm ``module`` applied to ``x`` (without the weights: some LayerNorm of ``x``, gain and
    bias fitted)."""
    CLAIM = "is a LayerNorm of its input"

    WEIGHTS_OPTIONAL = True
    TRACE = TraceUse(calls={"module": (ModuleKind.LAYER_NORM, "module"), "x": (ModuleKind.LAYER_NORM, "input")})

    out: Ref = THIS
    x: Ref
    module: ModuleRef

    BUG_FORMS = (GAIN_AND_BIAS_SWAPPED, DIVIDED_BY_VARIANCE, MEAN_NOT_SUBTRACTED, WRONG_AXIS, ALPHA_LEFT_OUT)
    PROPERTIES = (STANDARDISED_ROWS,)

    def normalised(self, s: TensorSource) -> torch.Tensor:
        """What the norm is applied to."""
        return s.t(self.x)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        return _layer_norm(s, self.out, s.t(self.x), self.module, "its input")


@dataclass(frozen=True, kw_only=True)
class FinalNormOrNone(LayerNormOf):
    """The final sequence: the LayerNorm ``module`` of the last block's output ``x`` (ViT-B/16, timm, DeiT), or that
    output itself where the model has no final LayerNorm (the head normalises the pooled token, as the paper's head
    did, or nothing does). Both are correct architectures; the claim says which held."""
    CLAIM = "is a final LayerNorm of the last block's output, or that output"
    # and an nn.TransformerEncoder the line called: the layout it reads (trace/reading/stack_layout.py)
    TRACE = TraceUse(calls=LayerNormOf.TRACE.calls, also_calls=frozenset({ModuleKind.TRANSFORMER_STACK}))

    NO_NORM = ("is the last block's output itself: no final LayerNorm (the head, or nothing, normalises the pooled "
               "token)")

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        out, x = s.t(self.out), s.t(self.x)
        if out.dim() == x.dim() == 3 and out.shape[1] == x.shape[1] + 1 and out[:, 1:].shape == x.shape:
            return self._class_token_joined_after(s, out[:, 1:], x)
        same, detail = close(out, x, "vs the last block's output")
        if same:
            return self.NO_NORM, True, detail
        claim, passed, more = super().verify(s)
        return claim, passed, more if passed else f"{more}; nor is it the last block's output itself: {detail}"

    def _class_token_joined_after(self, s: TensorSource, rows: torch.Tensor, x: torch.Tensor) -> tuple[str, bool, str]:
        """A final sequence one row longer than the last block's output: a class token that joined after the blocks
        (CaiT's class-attention stage, blocks of its own no marker shows), read first (a trace's
        trace/reading/late_class_token.py). The rows after it are checked; the class token's own row cannot be."""
        unchecked = ("; row 0, the class token that joined after the blocks, is not checked (its own blocks are "
                     "unmarked)")
        same, detail = close(rows, x, "rows 1… vs the last block's output")
        if same:
            return f"{self.NO_NORM}{unchecked}", True, detail
        claim, passed, more = _layer_norm(s, rows, x, self.module, "the last block's output")
        return (f"{claim} in rows 1…{unchecked}", passed,
                more if passed else f"{more}; nor are rows 1… the last block's output itself: {detail}")


@dataclass(frozen=True, kw_only=True)
class MlpInputNorm(LayerNormOf):
    """The MLP's LayerNorm: of the first residual sum ``x`` (a sequential block), or of the block input ``parallel``
    (a parallel-residual block, GPT-J's and GPT-NeoX's ``x + attn(ln_1(x)) + mlp(ln_2(x))``: the attention and the MLP
    both read the block input). Both are correct architectures; the claim says which held. A LayerNorm of any other
    tensor (the attention's normalised input, its output) is still the wrong tensor."""
    CLAIM = "is a LayerNorm of the first residual sum (or of the block's input)"

    OPTIONAL = (("parallel",), ("attn_in",))  # without the block input: the sequential form alone
    # what a correct architecture gives the LayerNorm in place of the first residual sum (head_input.py): the block
    # input, in a parallel block, which has no first residual sum to give
    CORRECT_INPUTS = ("parallel",)

    parallel: Ref | None = None
    attn_in: Ref | None = None  # the attention's LayerNorm: with default weights LN(it) ≈ LN(block input)

    def _gap(self, s: TensorSource, ref: Ref) -> float:
        """How far the step is from the module's LayerNorm of ``ref`` (inf where that cannot be recomputed)."""
        try:
            ln = s.module(self.module)
            weight, bias = weight_and_bias(ln)
            shape, eps = settings(ln, "normalized_shape", "eps")
            return float((s.t(self.out) - F.layer_norm(s.t(ref), shape, weight, bias, eps)).abs().max())
        except (NotCheckable, RuntimeError, AttributeError, TypeError):
            return float("inf")

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        claim, passed, detail = super().verify(s)
        if passed or self.parallel is None or not s.has(self.parallel):
            return claim, passed, detail
        if self.attn_in is not None and s.has(self.attn_in) and \
                self._gap(s, self.attn_in) <= self._gap(s, self.parallel):
            return claim, passed, detail  # nearer the LayerNorm of the attention's normalised input: the wrong tensor
        _, parallel, more = _layer_norm(s, self.out, s.t(self.parallel), self.module, "the block input")
        if not parallel:
            return claim, passed, f"{detail}; nor is it LayerNorm(the block input), a parallel-residual block: {more}"
        return ("equals LayerNorm(the block input): a parallel-residual block (GPT-J, GPT-NeoX), the MLP beside the "
                "attention, not after it"), True, more


@dataclass(frozen=True, kw_only=True)
class LayerNormStatistics(Check):
    """Tensors only: with no affine step (weight 1, bias 0) every position of ``out`` has mean 0 and standard
    deviation 1, and ``out`` is ``x`` normalised; for a source without the model's LayerNorm weights."""

    out: Ref = THIS
    x: Ref
    eps: float = 1e-5

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        got, inp = s.t(self.out), s.t(self.x)
        expected = F.layer_norm(inp, inp.shape[-1:], eps=self.eps)
        passed, detail = close(got, expected, "x normalised per position (no affine step)")
        mean, std = float(got.mean(-1).abs().max()), float(got.std(-1, unbiased=False).mean())
        detail += f"; max |mean| {fmt(mean, 6)}, mean std {fmt(std, 4)}"
        return "every position normalised to mean 0, std 1", passed, detail


def _normalised_residual(check: Any, s: TensorSource) -> Fit | None:
    """A residual sum with an operand's LayerNorm where the operand belongs (``x = norm(x) + attn(norm(x))``, a
    pre-norm block adding its sublayer's input back): the recorded sum minus the other operands is a LayerNorm of that
    operand (the block's own norm, its gain and bias fitted per feature)."""
    operands = getattr(check, "operands", ())
    if len(operands) < 2 or not all(s.has(ref) for ref in operands):
        return None
    out = s.t(check.out)
    for ref in operands:
        rest = out - added(s.t(other) for other in operands if other is not ref)
        rows = rest.reshape(-1, rest.shape[-1])
        if close(rows, rows.mean(0, keepdim=True).expand_as(rows), "")[0]:
            continue  # the same at every position (nothing, where the operand was left out): no LayerNorm to fit
        try:
            _, normalised, detail = fitted_layer_norm(rest, s.t(ref), s.name(ref))
        except (NotCheckable, RuntimeError):
            return None
        if normalised:
            return Fit(True, f"your {s.name(check.out)} adds a LayerNorm of {s.name(ref)} where {s.name(ref)} itself "
                             f"belongs: the residual was taken from the normalised stream ({detail})")
    return Fit(False, "no operand's LayerNorm in its place fits")


def _normalised_stream(check: Any, s: TensorSource) -> Fit | None:
    """The stream read as the sum of several captured operands (the MLP's residual ``x + attn_out``, S16 itself not
    on the check) with a LayerNorm of that whole stream in their place (``x = x + self.mlp(x)`` where ``x =
    self.norm2(x)`` on the line before: Differential_ViT's B6 at S19): the sum less its last operand, the sublayer's
    output, is a LayerNorm of the other operands' sum (gain and bias fitted per feature), and a captured step holds
    that sum unnormalised (the script's stream; where none does, the normalised tensor may be the model's stream, as
    CCT's ``src = self.norm1(src)``: no evidence); None where it is not."""
    operands: tuple[Ref, ...] = tuple(getattr(check, "operands", ()))
    if len(operands) < 3 or not all(s.has(ref) for ref in operands):
        return None
    stream = added(s.t(ref) for ref in operands[:-1])
    rest = s.t(check.out) - s.t(operands[-1])
    try:
        _, normalised, detail = fitted_layer_norm(rest, stream, "the stream")
    except (NotCheckable, RuntimeError):
        return None
    if not normalised:
        return Fit(False, f"the sum less its sublayer output is no LayerNorm of the stream ({detail})")
    named = _captured_as(s, stream)
    if named is None:  # no step holds the stream unnormalised: a model whose stream is its LayerNorm (CCT's norm1)
        return Fit(False, "the sum less its sublayer output is a LayerNorm of its other operands' sum, but no "
                          "captured step holds that sum unnormalised: the normalised tensor may be the stream itself")
    return Fit(True, f"your {s.name(check.out)} adds a LayerNorm of {named} where {named} itself belongs: the "
                     f"sublayer's own normalised input added back ({detail})")


def _captured_as(s: TensorSource, stream: torch.Tensor) -> str | None:
    """The captured tensor the stream is (S16, the attention's residual sum), by name; None where none is."""
    tensors = getattr(s, "tensors", None) or {}
    return next((name for name, tensor in tensors.items() if isinstance(tensor, torch.Tensor)
                 and tensor.shape == stream.shape and tensor.is_floating_point()
                 and close(stream, tensor.double(), "")[0]), None)


NORMALISED_STREAM = BugForm("the residual adds the normalised stream", "the sum less its sublayer output vs a "
                            "LayerNorm of its other operands' sum (gain and bias fitted)", _normalised_stream)
NORMALISED_RESIDUAL = BugForm("LayerNorm of the wrong tensor", "the sum with one operand replaced by its LayerNorm "
                              "(gain and bias fitted)", _normalised_residual)


@dataclass(frozen=True, kw_only=True)
class ResidualLayerNorm(Check):
    """Post-norm: ``out`` is LayerNorm ``module`` of the sum of ``operands`` (without the weights: gain and bias
    fitted)."""

    WEIGHTS_OPTIONAL = True
    TRACE = TraceUse(calls={"module": (ModuleKind.LAYER_NORM, "module"),
                            "operands": (ModuleKind.LAYER_NORM, "input")},
                     # an unmarked sublayer output, from the module the line called or the tensor it read
                     # (trace/reading/residuals.py); a Dropout's output, the LayerNorm's input where the residual was
                     # dropped on the line or the statement feeding it (trace/reading/sublayer_alone_normed.py)
                     also_calls=frozenset({ModuleKind.LINEAR, ModuleKind.USER, ModuleKind.MULTIHEAD_ATTENTION,
                                           ModuleKind.DROPOUT}),
                     reads_locals=True)
    LEFT_OUT = "residual dropped"

    out: Ref = THIS
    operands: tuple[Ref, ...]
    module: ModuleRef

    def reading(self, name: str, ref: Ref) -> Check:
        """Read from the LayerNorm's own input (the sum, where its operands are not all captured)."""
        if name == "operands":
            return LayerNormOf(out=self.out, x=ref, module=self.module)
        return super().reading(name, ref)

    BUG_FORMS: ClassVar[tuple[BugForm, ...]] = (GAIN_AND_BIAS_SWAPPED, DIVIDED_BY_VARIANCE, MEAN_NOT_SUBTRACTED,
                                                WRONG_AXIS, ALPHA_LEFT_OUT)
    PROPERTIES = (STANDARDISED_ROWS,)

    def normalised(self, s: TensorSource) -> torch.Tensor:
        """What the norm is applied to: the residual sum."""
        return added(s.t(ref) for ref in self.operands)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        return layer_norm_of_sum(s, self.out, self.operands, "input + sublayer output", self.module)


@dataclass(frozen=True, kw_only=True)
class ResidualThenNorm(ResidualLayerNorm):
    """A pre-norm block's "residual + norm" step (the ViT's S16): LayerNorm ``module`` of the sum of ``operands`` (the
    MLP's input), or that sum itself, where the code adds the residual on one line and normalises it on the next and
    the marker sits on the sum. The sum passes as the sum only; whether a LayerNorm follows it before the MLP is the
    next step's check (``GeluOfLinear.unnormalised``)."""
    CLAIM = "is a LayerNorm of the residual sum, or that sum"

    sum_claim = "is the residual sum input + sublayer output (its LayerNorm, the MLP's input, is taken on another line)"
    BUG_FORMS = (GAIN_AND_BIAS_SWAPPED, DIVIDED_BY_VARIANCE, MEAN_NOT_SUBTRACTED, WRONG_AXIS, ALPHA_LEFT_OUT,
                 NORMALISED_RESIDUAL, stream_left_out("residual dropped"))

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        total = added(s.t(ref) for ref in self.operands)
        raw, detail = close(s.t(self.out), total, "input + sublayer output vs the recorded tensor")
        if raw:
            return self.sum_claim, True, detail
        if (scaled := scaled_residual(s, self.out, self.operands)) is not None:
            return scaled
        claim, passed, more = super().verify(s)
        if passed:
            return claim, passed, more
        return "is LayerNorm(input + sublayer output), or that sum itself", False, (
            f"{more}; nor is it the residual sum itself: {detail}")


@dataclass(frozen=True, kw_only=True)
class ResidualSumOrPostNorm(ResidualThenNorm):
    """An encoder–decoder layer's "residual + norm" step, either form: post-norm, LayerNorm ``module`` of input +
    sublayer output; pre-norm (``x + sublayer(norm(x))``), that plain residual sum, with no norm after it. The ViT's
    S16 and the GPT's block end accept both forms the same way; the form that held is the claim. A pre-norm layer that
    adds the sublayer output to its normalised input, or drops the residual, is neither."""
    CLAIM = "is the residual sum, or a LayerNorm of it (post-norm)"

    sum_claim = ("is the residual sum input + sublayer output: a pre-norm layer (x + sublayer(norm(x))), no norm after "
                 "the sum")
