"""An `nn.MultiheadAttention` call a marked line made (its output is the step): the attention recomputed from the
call's own inputs and parameters gives what the fused module hides (the heads' concatenation before the output
projection, said on the page as derived from the call), and its inputs are checked against each other (the keys and
values come from one tensor; in a self-attention the queries too: K computed from the wrong input is caught)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from transformer_trace.checks.base import Check, close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.normalisation import fitted_layer_norm
from transformer_trace.models.recording import Role
from transformer_trace.sources import ModuleRef, NotCheckable, Ref, TensorSource

if TYPE_CHECKING:
    from transformer_trace.trace.reading.capture import ModuleCall


@dataclass(frozen=True)
class OutputProjection:
    """An attention module's output projection, as the checks read a Linear: its weight and bias."""

    weight: torch.Tensor
    bias: torch.Tensor | None


def _named(s: TensorSource, tensor: torch.Tensor) -> str:
    """``tensor`` (batch first) by the name of a captured tensor of the script that holds it (in its own layout,
    batch first or sequence first), or a LayerNorm of one (gain and bias fitted); "" where none does."""
    captured = [(name, t) for name, t in getattr(s, "tensors", {}).items()
                if "@" not in name and t.is_floating_point() and t.dim() == 3]
    for name, t in captured:
        for layout in (t, t.transpose(0, 1)):
            if layout.shape == tensor.shape and close(tensor, layout.double(), "")[0]:
                return s.name(Ref(name))
    for name, t in captured:
        for layout in (t, t.transpose(0, 1)):
            if layout.shape == tensor.shape and _layer_norm_of(tensor, layout.double()):
                return f"a LayerNorm of {s.name(Ref(name))}"
    return ""


def _layer_norm_of(got: torch.Tensor, x: torch.Tensor) -> bool:
    try:
        return fitted_layer_norm(got, x, "")[1]
    except NotCheckable:
        return False


def _inputs_apart(check: AttentionInputs, s: TensorSource) -> Fit | None:
    """Which input the queries, the keys and the values each read, in the script's names: the keys and values from one
    tensor and the queries from another in a self-attention (the keys and values from the block input, the queries
    from its LayerNorm), or the keys and values from two."""
    q, k, v = s.t(check.queries), s.t(check.keys), s.t(check.values)
    kv_one = close(v, k, "")[0]
    if kv_one and (not check.self_attention or close(q, k, "")[0]):
        return None
    names = {what: _named(s, t) or "a tensor no marked line shows" for what, t in (("q", q), ("k", k), ("v", v))}
    if kv_one:
        return Fit(True, f"your attention call read its keys and values from {names['k']} and its queries from "
                         f"{names['q']}: in a self-attention the queries, keys and values all come from one tensor")
    return Fit(True, f"your attention call read its keys from {names['k']} and its values from {names['v']}: the "
                     "keys and values come from one tensor")


@dataclass(frozen=True, kw_only=True)
class AttentionInputs(Check):
    """The inputs an attention module was called with: keys and values from one tensor, and in a self-attention
    the queries from it too."""

    BUG_FORMS = (BugForm("computed from another tensor", "which input the queries, keys and values each read, by "
                         "the script's names", _inputs_apart),)

    # (not query/key/value: a field ``key`` would hide the registry name, Typed.key(), on the instance)
    queries: Ref
    keys: Ref
    values: Ref
    self_attention: bool

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        pairs = [("keys", "values", self.keys, self.values)]
        if self.self_attention:
            pairs.insert(0, ("queries", "keys", self.queries, self.keys))
        details, passed = [], True
        for first, second, a, b in pairs:
            same, detail = close(s.t(b), s.t(a), f"the {second}' input vs the {first}'")
            passed &= same
            details.append(detail if same else f"{detail}: the {second} were computed from another tensor than the "
                           f"{first}")
        claim = "queries, keys and values come from one tensor" if self.self_attention else (
            "keys and values come from one tensor")
        return claim, passed, "; ".join(details)


def attention_parts(call: ModuleCall) -> dict[str, torch.Tensor] | None:
    """The call's attention recomputed in float64 (batch first): its inputs, Q/K/V per head, the probabilities, the
    heads' concatenation and the output; None where its parameters were not copied or the recomputation does not give
    the module's own output (a mask or another argument the hook does not see)."""
    params, attrs = call.params, call.attrs
    inputs = [x for x in call.inputs[:3] if x is not None]
    output = call.outputs[0] if call.outputs else None
    if len(inputs) < 3 or output is None:
        return None
    first = attrs.get("batch_first", False)
    q_in, k_in, v_in = (x.double() if first else x.double().transpose(0, 1) for x in inputs)
    out = output.double() if first else output.double().transpose(0, 1)
    weight = params.get("in_proj_weight")
    if weight is None:
        parts = [part for part in (params.get(f"{p}_proj_weight") for p in "qkv") if part is not None]
        weight = torch.cat(parts) if len(parts) == 3 else None
    out_weight = params.get("out_proj.weight")
    if weight is None or out_weight is None or q_in.dim() != 3:
        return None
    weight, E, heads = weight.double(), q_in.shape[-1], int(attrs.get("num_heads", 1))
    bias = params.get("in_proj_bias")
    bias = bias.double() if bias is not None else torch.zeros(3 * E, dtype=torch.float64)
    split = [F.linear(x, weight[i * E:(i + 1) * E], bias[i * E:(i + 1) * E]) for i, x in enumerate((q_in, k_in, v_in))]
    q, k, v = (t.reshape(t.shape[0], t.shape[1], heads, E // heads).transpose(1, 2) for t in split)
    probs = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(E // heads), dim=-1)
    concat = (probs @ v).transpose(1, 2).reshape(q_in.shape[0], q_in.shape[1], E)
    out_bias = params.get("out_proj.bias")
    again = F.linear(concat, out_weight.double(), out_bias.double() if out_bias is not None else None)
    if not close(again, out, "")[0]:
        return None
    return {"query": q_in, "key": k_in, "value": v_in, "probs": probs, "concat": concat}


def attention_binding(call: ModuleCall, module: ModuleRef,
                      name: str) -> tuple[OutputProjection, dict[str, torch.Tensor], bool] | None:
    """For a Linear step that is an attention module's output: its output projection (as the checks read a Linear),
    the tensors recomputed from the call under names of their own (``name``: the module's catalogue name), and whether
    it is a self-attention (the catalogue does not declare ``module`` a cross-attention's)."""
    parts = attention_parts(call)
    if parts is None:
        return None
    weight = call.params["out_proj.weight"]
    assert weight is not None  # attention_parts read it
    layer = OutputProjection(weight, call.params.get("out_proj.bias"))
    recomputed = {f"{name}@{call.module}.{key}": value for key, value in parts.items()}
    return layer, recomputed, Role.CROSS_ATTENTION not in module.roles
