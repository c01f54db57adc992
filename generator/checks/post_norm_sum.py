"""A post-norm residual sum marked on the line that normalises it (``x = self.ln1(x + self.attn(x, mask))``): the
step a residual-sum snapshot captures is then the LayerNorm of the operands' sum, not the sum, and no line of the
script holds the sum itself. A correct form (a post-norm block, as the original Transformer's), read with the gain
and bias fitted per feature (``fitted_layer_norm``: the weights of a LayerNorm called inside the expression are not
the step's own call). Its bug form: the residual dropped on that line (``x = self.ln1(self.attn(x, mask))``), the
LayerNorm of the sublayer output alone, the stream (the first operand) left out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.normalisation import layer_norm_of_sum
from transformer_trace.sources import NotCheckable, Ref, TensorSource

POST_NORM_SUM_CLAIM = "is a LayerNorm of the operands' sum, normalised on the sum's own line (post-norm)"


def _layer_norm_of(s: TensorSource, out: Ref, operands: Sequence[Ref], of: str) -> tuple[bool, str] | None:
    """Whether ``out`` is a LayerNorm (gain and bias fitted per feature) of the sum of ``operands``, and the detail;
    None where the tensors cannot tell (too few positions, shapes that differ)."""
    if not operands or not all(s.has(ref) for ref in (out, *operands)):
        return None
    if torch.broadcast_shapes(*(s.t(ref).shape for ref in operands)) != s.t(out).shape:
        return None  # the sum is of another shape than the step
    try:
        _, normalised, detail = layer_norm_of_sum(s, out, operands, of)
    except (NotCheckable, RuntimeError):
        return None
    return normalised, detail


def normalised_sum(s: TensorSource, out: Ref, operands: Sequence[Ref]) -> tuple[str, bool, str] | None:
    """The residual sum's verdict where ``out`` is the LayerNorm of the operands' sum (post-norm on the sum's line),
    else None: the plain sum's verdict stands."""
    if len(operands) < 2:
        return None
    fit = _layer_norm_of(s, out, operands, " + ".join(s.name(ref) for ref in operands))
    if fit is None or not fit[0]:
        return None
    return POST_NORM_SUM_CLAIM, True, fit[1]


def _normalised_without_stream(check: Any, s: TensorSource) -> Fit | None:
    """The residual dropped on a post-norm line: the step is a LayerNorm of the sublayer outputs alone (every operand
    but the stream, the first)."""
    operands: tuple[Ref, ...] = tuple(getattr(check, "operands", ()))
    if len(operands) < 2:
        return None
    rest = operands[1:]
    alone = " + ".join(s.name(ref) for ref in rest)
    fit = _layer_norm_of(s, check.out, rest, alone)
    if fit is None:
        return None
    if not fit[0]:
        return Fit(False, "no LayerNorm of the sublayer output alone fits")
    return Fit(True, f"your {s.name(check.out)} leaves out {s.name(operands[0])}: it is a LayerNorm of {alone} "
                     f"alone, the post-norm sum without its stream ({fit[1]})")


NORMALISED_STREAM_LEFT_OUT = BugForm("residual dropped", "a LayerNorm of the sublayer output alone (gain and bias "
                                     "fitted), the stream left out of a post-norm sum", _normalised_without_stream)
