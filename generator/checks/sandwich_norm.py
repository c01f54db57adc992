"""A residual sum whose sublayer output is normalised before it joins the stream, ``x + norm(sublayer(norm(x)))``:
the "sandwich" of Gemma 2 (a pre-norm and a post-norm around each sublayer), Swin V2's res-post-norm, OLMo 2. A
correct form of a residual sum: the recorded sum minus the stream (the first operand, as every catalogue lists it)
is a LayerNorm or RMSNorm of the sublayer output, its gain (and bias) fitted per feature (``fitted_layer_norm``: the
post-norm's own weights are not the step's call). The stream replaced by its norm (``norm(x) + attn(norm(x))``) is
still no such form: that is the bug ``NORMALISED_RESIDUAL`` names, and only the stream can be it."""

from __future__ import annotations

from collections.abc import Sequence

from transformer_trace.checks.base import close
from transformer_trace.checks.normalisation import fitted_layer_norm
from transformer_trace.sources import NotCheckable, Ref, TensorSource

SANDWICH_CLAIM = ("is the stream plus a norm of the sublayer output: a sandwich norm around the sublayer (Gemma 2, "
                  "Swin V2's res-post-norm), normalised before the residual sum")


def sandwich_sum(s: TensorSource, out: Ref, operands: Sequence[Ref]) -> tuple[str, bool, str] | None:
    """(the claim, True, the detail) where ``out`` is the first operand (the stream) plus a norm of the other one (the
    sublayer output); None where it is not, or the tensors cannot tell."""
    if len(operands) != 2 or not all(s.has(ref) for ref in (out, *operands)):
        return None
    stream, sublayer = s.t(operands[0]), s.t(operands[1])
    rest = s.t(out) - stream
    if rest.shape != sublayer.shape:
        return None
    flat = rest.reshape(-1, rest.shape[-1])
    if close(flat, flat.mean(0, keepdim=True).expand_as(flat), "")[0]:
        return None  # the same at every position (the sublayer output left out): no norm of it to fit
    try:
        _, normalised, detail = fitted_layer_norm(rest, sublayer, s.name(operands[1]))
    except (NotCheckable, RuntimeError):
        return None
    if not normalised:
        return None
    return SANDWICH_CLAIM, True, f"your {s.name(out)} minus {s.name(operands[0])}: {detail}"
