"""An encoder–decoder's attention output marked on a line that calls `nn.MultiheadAttention` (the heads and their
concatenation are PyTorch's inside): the call recomputed from its own inputs and weights (attention_calls.py), and which
rows it was given read against the stream it belongs to. A self-attention reads its keys and values from the layer's
input (or a LayerNorm of it) and its queries from the last rows of those keys (all of them; or one new row per call,
a decoder decoding incrementally: ``self_attn(tgt[-1:], tgt, tgt)``); a cross-attention reads its keys and values from
the encoder's output. Named where they do not: the keys and values taken from the query rows alone, a query that
attends to later keys of a causal self-attention, the cross-attention's keys from the decoder's own stream."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks import ContextConcat
from transformer_trace.checks.base import THIS, Check, close
from transformer_trace.checks.evidence import BugForm, Fit, Property
from transformer_trace.checks.normalisation import fitted_layer_norm
from transformer_trace.sources import NotCheckable, Ref, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.attention_calls import attention_parts
from transformer_trace.trace.reading.binding import Bound, Given
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.records import TensorDict


def _as_batch_first(s: TensorSource, ref: Ref | None, like: torch.Tensor) -> torch.Tensor | None:
    """The captured ``ref`` in the recomputed tensors' layout (batch first, ``like``'s batch), sequence-first or not;
    None where it is not captured or has another shape."""
    if ref is None or not s.has(ref):
        return None
    t = s.t(ref)
    for layout in (t, t.transpose(0, 1)) if t.dim() == 3 else ():
        if layout.shape[0] == like.shape[0] and layout.shape[-1] == like.shape[-1]:
            return layout
    return None


def _said(s: TensorSource, ref: Ref | None) -> str:
    """The captured tensor a copy of the binding's stands for, by its record name (said in the user's names)."""
    return s.name(ref).split("@")[0] if ref is not None else ""


def _is_or_normed(got: torch.Tensor, stream: torch.Tensor) -> str | None:
    """How ``got`` is ``stream``: itself, or a LayerNorm of it (gain and bias fitted: a pre-norm layer); None."""
    if got.shape != stream.shape:
        return None
    if close(got, stream, "")[0]:
        return "itself"
    try:
        return "its LayerNorm" if fitted_layer_norm(got, stream, "")[1] else None
    except (NotCheckable, RuntimeError):
        return None


def _query_positions(q: torch.Tensor, k: torch.Tensor) -> list[int] | None:
    """The key row each query row is (the same at every item), in order; None where one is none of them."""
    found = []
    for row in range(q.shape[1]):
        same = [j for j in range(k.shape[1]) if close(q[:, row], k[:, j], "")[0]]
        if not same:
            return None
        found.append(same[-1])
    return found


def _stream_read(s: TensorSource, k: torch.Tensor, ref: Ref | None, details: list[str]) -> bool:
    """Whether the keys' input is the captured ``ref`` or a LayerNorm of it (True where it is not captured), said
    in ``details``."""
    stream = _as_batch_first(s, ref, k)
    if ref is None or stream is None:
        return True
    how = _is_or_normed(k, stream)
    details.append(f"the keys' input is {_said(s, ref)}" + (f", {how}" if how != "itself" else "") if how else
                   f"the keys' input is not {_said(s, ref)} nor a LayerNorm of it")
    return how is not None


def _query_rows_alone(check: Any, s: TensorSource) -> Fit | None:
    """A self-attention whose keys and values are its query rows alone, where the layer's input holds more rows and
    the queries are its last: each new row attends to itself only."""
    q, k = s.t(check.queries), s.t(check.keys)
    stream = _as_batch_first(s, check.stream, k)
    if not check.self_attention or stream is None or stream.shape[1] <= q.shape[1]:
        return None
    alone = close(k, q, "")[0] and close(s.t(check.values), q, "")[0]
    last = _is_or_normed(q, stream[:, -q.shape[1]:]) is not None
    if alone and last:
        return Fit(True, f"your attention call read its keys and values from its {q.shape[1]} query row(s) alone, "
                         f"where {_said(s, check.stream)} holds {stream.shape[1]} rows: the new row attends to itself "
                         "only, never to the rows before it")
    return Fit(False, "the keys are not the query rows alone")


def _later_key_attended(check: Any, s: TensorSource) -> str | None:
    """In a causal self-attention, the weight a query row gives the keys after its own position (which key row it
    is, read from the values): none in any correct form."""
    if not check.causal or not check.self_attention:
        return None
    q, k, probs = s.t(check.queries), s.t(check.keys), s.t(check.probs)
    positions = _query_positions(q, k)
    if positions is None:
        return None
    later = max((float(probs[:, :, row, at + 1:].abs().max()) for row, at in enumerate(positions)
                 if at + 1 < k.shape[1]), default=0.0)
    if later <= 1e-6:
        return None
    return (f"a position sees the next: your query row(s) are row(s) {positions} of the keys' input, and give weight "
            f"up to {later:.3g} to the rows after them (a causal self-attention's new row is the last)")


def _decoder_stream_crossed(check: Any, s: TensorSource) -> Fit | None:
    """A cross-attention whose keys and values are the decoder's own stream (the layer's input), not the encoder's
    output."""
    k = s.t(check.keys)
    decoder = _as_batch_first(s, check.decoder_input, k)
    encoder = [t for ref in (check.stream, check.encoder_output) if (t := _as_batch_first(s, ref, k)) is not None]
    if check.self_attention or decoder is None or any(_is_or_normed(k, t) is not None for t in encoder):
        return None
    how = _is_or_normed(k, decoder)
    if how is not None and close(s.t(check.values), k, "")[0]:
        return Fit(True, f"your cross-attention read its keys and values from {_said(s, check.decoder_input)}"
                         f"{'' if how == 'itself' else ' (' + how + ')'}, the decoder's own stream, where the "
                         f"encoder's output belongs")
    return Fit(False, "the keys are not the decoder's input")


@dataclass(frozen=True, kw_only=True)
class AttentionCallRows(Check):
    """``out`` is an `nn.MultiheadAttention` call's output, recomputed from the call: ``queries``, ``keys`` and
    ``values`` its inputs and ``probs`` its weights (batch first); ``stream`` the tensor its keys belong to (a
    self-attention's layer input, a cross-attention's encoder output), ``decoder_input`` a cross-attention's layer input
    (read by the bug form only)."""
    CLAIM = "is the attention module's output over the keys and values of its stream"
    BUG_FORMS = (BugForm("keys from the query rows alone", "the keys and values vs the query rows, the layer's input "
                         "longer", _query_rows_alone),
                 BugForm("cross-attention over the decoder's stream", "the keys and values vs the decoder layer's "
                         "input", _decoder_stream_crossed))
    OPTIONAL = (("stream",), ("encoder_output",), ("decoder_input",))
    SUBSTITUTES = False  # its inputs are the call's own: another captured tensor in their place is not its output
    PROPERTIES = (Property("no query attends to a later key", "each query row's position in the keys, the weights "
                           "after it", _later_key_attended),)

    out: Ref = THIS
    queries: Ref
    keys: Ref
    values: Ref
    probs: Ref
    stream: Ref | None = None
    encoder_output: Ref | None = None  # a cross-attention's: the traced encoder layer's output, where memory is not
    decoder_input: Ref | None = None
    self_attention: bool
    causal: bool = False

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        q, k, v = s.t(self.queries), s.t(self.keys), s.t(self.values)
        details = ["recomputed from the call's own inputs and weights: it gives the module's output"]
        same, detail = close(v, k, "the values' input vs the keys'")
        passed = same
        details.append(detail)
        claim = "cross-attention over the encoder's output"
        if self.self_attention:
            rows = q.shape[1]
            last, detail = close(q, k[:, -rows:], "the queries vs the last rows of the keys' input") \
                if rows <= k.shape[1] else (False, f"{rows} query rows for {k.shape[1]} keys")
            passed &= last
            details.append(detail)
            claim = ("self-attention of the layer's input, all its rows" if rows == k.shape[1] else
                     f"self-attention of the last {rows} rows (one decoded per call) over " if rows > 1 else
                     "self-attention of the last row (one decoded per call) over "
                     "the layer's input")
        if self.self_attention:
            passed &= _stream_read(s, k, self.stream, details)
        elif not any(s.has(ref) and _stream_read(s, k, ref, []) for ref in (self.stream, self.encoder_output) if ref):
            decoder = _as_batch_first(s, self.decoder_input, k)  # no encoder output captured that it is
            crossed = decoder is not None and _is_or_normed(k, decoder) is not None
            passed &= not crossed
            details.append(f"the keys' input is {_said(s, self.decoder_input)}, the decoder's own stream" if crossed
                           else "the keys' input is not the decoder's own stream (no marked encoder output is it)")
        else:
            details.append("the keys' input is the encoder's output")
        return f"equals nn.MultiheadAttention recomputed: {claim}", passed, "; ".join(details)


def attention_call_rows(check: Check, calls: Sequence[ModuleCall], source: TensorDict,
                        main: torch.Tensor | None) -> Bound | None:
    """An encoder–decoder attention step (``ContextConcat``) whose line called `nn.MultiheadAttention` and whose
    tensor is that call's output: the call's inputs and weights recomputed (None where it does not give its output)
    and read as ``AttentionCallRows``."""
    if not isinstance(check, ContextConcat) or main is None:
        return None
    template = str(check.probs)
    if not template.startswith(("{dec}.", "{enc}.")):
        return None  # the encoder–decoder numbering's attentions (a GPT's concat is marked before its projection)
    found = [c for c in calls if c.kind == ModuleKind.MULTIHEAD_ATTENTION and c.outputs and c.outputs[0] is not None
             and _holds(c.outputs[0], main)]
    parts = attention_parts(found[-1]) if found else None
    if parts is None:
        return None
    prefix = source.name(check.probs).rsplit(".", 1)[0]
    layer = template.split(".", 1)[0]  # {dec} or {enc}
    self_attention = not template.startswith("{dec}.cross_attn")
    call = found[-1].module
    names = {key: Ref(f"{prefix}@{call}.{key}") for key in ("query", "key", "value", "probs")}
    tensors = {**source.tensors, **{ref.template: parts[key] for key, ref in names.items()}}
    # the streams the keys belong to, as captured (all their rows: a one-row step reads the others at its position)
    streams = {"stream": Ref(f"{layer}.input") if self_attention else Ref("memory"),
               "encoder_output": None if self_attention else Ref("{enc}.output"),
               "decoder_input": None if self_attention else Ref(f"{layer}.input")}
    copied: dict[str, Ref | None] = {}
    for field, ref in streams.items():
        copied[field] = Ref(f"{source.name(ref)}@{call}.read") if ref is not None and source.has(ref) else None
        if ref is not None and copied[field] is not None:
            tensors[f"{source.name(ref)}@{call}.read"] = _whole(source, source.name(ref))
    rows = AttentionCallRows(out=check.out, queries=names["query"], keys=names["key"], values=names["value"],
                             probs=names["probs"], **copied, self_attention=self_attention,
                             causal=template.startswith("{dec}.self_attn"))
    given = Given(source, tensors)
    return Bound(rows, given, None, f"the inputs and weights of the {found[-1].module} it called (the heads and their "
                 "concatenation are inside it)", said=((prefix, f"the {found[-1].module} your line called"),))


def _whole(source: TensorDict, name: str) -> torch.Tensor:
    """The captured tensor ``name`` with all its rows: as the run recorded it, where the step's view holds only its
    last position's (last_position.py: a one-row step reads the others at its position)."""
    recorded = getattr(getattr(source, "run", None), "catalogued", None)
    whole = recorded.tensors.get(name) if recorded is not None else None
    return whole if isinstance(whole, torch.Tensor) else source.tensors[name]


def _holds(output: Any, main: torch.Tensor) -> bool:
    """The call's output is the step (sequence-first or batch-first)."""
    out = output.double()
    return any(layout.shape == main.shape and close(layout, main.double(), "")[0]
               for layout in (out, out.transpose(0, 1)) if out.dim() == 3)
