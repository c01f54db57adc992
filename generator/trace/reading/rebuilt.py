"""A module the marked line called, rebuilt as the checks read it from the call's own parameters: an ``nn.Linear`` or a
user's class that is a projection by its output (trace/reading/projections.py), an ``nn.LayerNorm`` or a user's class
that is one by its parameters (a gain and a bias, named as users name them)."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.called_names import CALLED_AS
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.projections import user_projection

BIAS_NAMES = ("bias", "beta", "b_2", "b", "shift", "offset")  # how a user's own LayerNorm names its bias
GAIN_NAMES = ("weight", "gamma", "a_2", "g", "scale", "gain", "alpha")  # ... and its gain
EPSILON_NAMES = ("eps", "epsilon", "variance_epsilon")


def looks_like(kind: str, call: ModuleCall) -> bool:
    """A user's own module that is a LayerNorm by its parameters: a gain and a bias, one value per feature; a
    projection by its output (trace/reading/projections.py); or an embedding by its output (``embedding_table``)."""
    if kind == ModuleKind.LINEAR:
        return user_projection(call) is not None
    if kind == ModuleKind.EMBEDDING:
        return embedding_table(call) is not None
    scale = tanh_scale(call)
    params = [p for name, p in call.params.items() if p is not None and name != scale]
    return (kind == ModuleKind.LAYER_NORM and len(params) == 2 and all(p.dim() == 1 for p in params)
            and params[0].shape == params[1].shape and bool(call.inputs) and call.inputs[0] is not None
            and call.inputs[0].shape[-1:] == params[0].shape)


def tanh_scale(call: ModuleCall) -> str | None:
    """The name of a user's norm's learned scalar where it has one beside two other parameters: a DynamicTanh's
    ``alpha`` (``gamma * tanh(alpha * x) + beta``, in place of a LayerNorm); None elsewhere."""
    params = {name: p for name, p in call.params.items() if p is not None}
    scalars = [name for name, p in params.items() if p.numel() == 1]
    return scalars[0] if call.kind == ModuleKind.USER and len(params) == 3 and len(scalars) == 1 else None


def embedding_table(call: ModuleCall) -> str | None:
    """The name of the one parameter of a user's module that is an embedding's table (V, C): its output is that table's
    rows indexed by its integer input, whatever its class is called (DeepSeek-V3's ParallelEmbedding); None where it is
    not (a table of another width, or rows the ids do not pick)."""
    tables = [(name, p) for name, p in call.params.items() if p is not None]
    ids = call.inputs[0] if call.inputs else None
    output = call.outputs[0] if call.outputs else None
    if (len(tables) != 1 or tables[0][1].dim() != 2 or ids is None or ids.is_floating_point() or output is None
            or ids.numel() == 0 or int(ids.min()) < 0 or int(ids.max()) >= tables[0][1].shape[0]):
        return None
    rows = tables[0][1][ids.long()]
    return tables[0][0] if rows.shape == output.shape and torch.equal(rows.to(output.dtype), output) else None


def rebuild(call: ModuleCall, kind: str) -> SimpleNamespace | None:
    """The module as the checks read it (weight, bias, and for a LayerNorm its shape and epsilon), from the call's own
    parameters; None where they were not copied."""
    params = call.params
    if kind == ModuleKind.LINEAR and call.kind == ModuleKind.LINEAR and params.get("weight") is not None:
        # (with the attribute its statement called it by, where one is read: called_names.py)
        return SimpleNamespace(weight=params["weight"], bias=params.get("bias"), traced=True,
                               called_as=call.attrs.get(CALLED_AS))
    if kind == ModuleKind.LINEAR and call.kind == ModuleKind.USER:
        return user_projection(call)
    if kind != ModuleKind.LAYER_NORM or not call.inputs or call.inputs[0] is None:
        return None
    width = call.inputs[0].shape[-1]
    if call.kind == ModuleKind.LAYER_NORM:
        weight, bias = params.get("weight"), params.get("bias")
        eps, own, alpha = call.attrs.get("eps", 1e-5), False, None
    else:
        scale = tanh_scale(call)
        names = [name for name in params if name != scale]
        bias_name = next((n for n in names if n.lower() in BIAS_NAMES), None)
        gain_name = next((n for n in names if n.lower() in GAIN_NAMES), None)
        if len(names) == 2 and (bias_name is None) != (gain_name is None):  # one of the two named: the other is
            named = bias_name or gain_name or ""                              # the other parameter
            other = names[1 - names.index(named)]
            bias_name, gain_name = bias_name or other, gain_name or other
        if bias_name is None or gain_name is None or bias_name == gain_name:
            return None  # which parameter is the gain is not told by its name: not guessed
        weight, bias = params[gain_name], params[bias_name]
        eps, own = next((call.attrs[n] for n in EPSILON_NAMES if n in call.attrs), 1e-5), True
        alpha = params[scale] if scale is not None else None
    return SimpleNamespace(weight=weight if weight is not None else torch.ones(width),
                           bias=bias if bias is not None else torch.zeros(width),
                           normalized_shape=(width,), eps=eps, own_code=own, called=call.module,
                           tanh_alpha=alpha)
