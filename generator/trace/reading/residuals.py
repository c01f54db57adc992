"""A residual step's sublayer output taken from the module the marked line called (issue 40: evidence already captured
is used before a step is called not checkable). ``x = x + self.attn(self.attn_ln(x))[0]`` with no snapshot on the
attention's output: the attention module's call (a module of the user's, a Linear, an nn.MultiheadAttention) gave it,
so the residual sum is checked with that output as its sublayer operand (checks/sublayer.py). A call that wraps the
residual itself (a SublayerConnection, called with the stream and returning the step) is looked through to the
sublayer it called; a LayerNorm's output is never taken for the sublayer's. Where the stream the sublayer was added
to is not captured as the catalogue's operands (a pre-norm block's MLP residual with the attention's output inside an
``nn.MultiheadAttention``), it is the input of the LayerNorm the line called, where that equals a captured step (S16,
the attention's residual sum). Where the line called no module for it (the sublayer ran on the lines before,
``x = x + y``), the one tensor of the step's shape the line read that is none of the captured operands is the
sublayer output. Sequence-first code's calls are read in the page's layout (its tensors' axes as the
step's own value was permuted into the catalogue's)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

from transformer_trace.checks import PlusParameter, ResidualLayerNorm, SumOf, close
from transformer_trace.checks.sublayer import SublayerFromCall
from transformer_trace.sources import ParamRef, Ref, TensorDict
from transformer_trace.trace.child.protocol import FED_AT, ModuleKind
from transformer_trace.trace.reading.call_layout import in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.same_tensors import same_tensor
from transformer_trace.trace.reading.weights import Bound, Given

SUBLAYER_KINDS = (ModuleKind.USER, ModuleKind.LINEAR, ModuleKind.MULTIHEAD_ATTENTION)


def sublayer_bound(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                   order: tuple[int, ...] | None = None) -> Bound | None:
    """``check`` (a residual sum, or a LayerNorm of one) read with its last operand, the sublayer output no snapshot
    shows, from the call of the marked line that gave it; None where it is captured, or no call gives it. ``main`` is
    the step's value as captured; ``order`` the axis order the checks read it in (reading/call_layout.py)."""
    if not isinstance(check, (SumOf, ResidualLayerNorm)) or main is None or not check.operands:
        return None
    operands = check.operands
    if source.has(operands[-1]):
        return _stream_from_norm(check, calls, source, main, order)
    tensors = dict(source.tensors)
    # the stream, where it is the one other operand and no snapshot shows it: from the norm the line applied to it
    # (where it is the sum of several, the norm's input is that sum, not the operand missing)
    streams: tuple[Ref, ...] = operands[:-1] if len(operands) == 2 and not source.has(operands[0]) else ()
    norms = _stream_norms(calls, main)
    norm = _fed_norm(norms, calls, main) if streams else None
    if norm is not None:
        tensors[_stream_name(source.name(streams[0]), norm)] = in_order(norm.inputs[0], order)
    known = {source.name(ref): Ref(source.name(ref) if source.has(ref) else _stream_name(source.name(ref), norm))
             for ref in operands[:-1] if source.has(ref) or norm is not None}  # in the operands' order
    call = _sublayer_call(calls, main, [tensors[ref.template] for ref in known.values()])
    if call is None:
        return (_local_read(check, calls, source, main, order) or _table_read(check, calls, source)
                or _added_inside(check, calls, source, main, order))
    missing = source.name(operands[-1])
    name = f"{missing}@{call.module}.output"
    kept: tuple[Ref, ...] = (*known.values(), Ref(name))
    absent = tuple(source.name(ref) for ref in operands[:-1] if source.name(ref) not in known)
    captured_stream = _captured_stream(norms, order, source) if absent else None
    if captured_stream in {source.name(ref) for ref in kept}:
        captured_stream = None  # the norm read an operand itself (``x = attn_out``): the stream was left out, not found
    if captured_stream is not None:  # the stream the sublayer is added to, as the line's LayerNorm read it: a step
        kept, absent = (Ref(captured_stream), Ref(name)), ()
    given = Given(source, {**tensors, name: in_order(call.outputs[0], order)})
    out = getattr(check, "out")
    if not source.has(out) and _marks_the_sum(calls, main, [tensors[ref.template] for ref in known.values()]):
        out = Ref(f"{source.name(out)}, the value of the marked line")  # the step lists the operands, the line the sum
        given = Given(source, {**given.tensors, out.template: in_order(main, order)})
    stream = (f"; {_stream_name(source.name(streams[0]), norm)}" if norm is not None else
              f"; the stream it is added to as {captured_stream}, the input of the LayerNorm the line called"
              if captured_stream is not None else "")
    step = check if out is getattr(check, "out") else dataclasses.replace(check, out=out)
    return Bound(SublayerFromCall(out=out, operands=kept, step=step, absent=absent, called=call.module), given, None,
                 f"{missing} taken from the output of the {call.module} "
                 f"{'an unmarked statement before the line' if call.attrs.get(FED_AT) is not None else 'the line'} "
                 f"called{stream} (no captured "
                 "snapshot shows it)")


def _marks_the_sum(calls: Sequence[ModuleCall], main: torch.Tensor, captured: list[torch.Tensor]) -> bool:
    """Whether the marked line's value is the residual sum (a step that lists the operands, ``res1_a, res1_b``, marked
    on the line that adds them): a call that returned it was given a captured operand (a wrapper adding the residual
    inside, ``self.sublayer[0](x, lambda x: self.attn(x, x, x))``), or no call returned it (``x + self.attn(...)`` on
    the line); not where a sublayer's call returned it from another input (the operand marked, not the sum)."""
    returned = [call for call in calls if call.outputs and isinstance(call.outputs[0], torch.Tensor)
                and tuple(call.outputs[0].shape) == tuple(main.shape) and same_tensor(call.outputs[0], main)]
    return not returned or any(same_tensor(given, c) for call in returned for given in call.inputs
                               if isinstance(given, torch.Tensor) for c in captured)


def _stream_from_norm(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor,
                      order: tuple[int, ...] | None) -> Bound | None:
    """A pre-norm sum whose sublayer output is captured and whose stream no snapshot shows (an encoder's block output
    ``x + ffn(norm(x))`` read as post-norm: its first operand the LayerNorm a pre-norm layer has no step for): the
    stream is the input of the LayerNorm whose output the line fed the sublayer; None where there is not one."""
    operands = check.operands
    if len(operands) != 2 or source.has(operands[0]) or not source.has(getattr(check, "out")):
        return None
    norm = _fed_norm(_stream_norms(calls, main), calls, main)
    if norm is None:
        return None
    name = _stream_name(source.name(operands[0]), norm)
    given = Given(source, {**source.tensors, name: in_order(norm.inputs[0], order)})
    return Bound(dataclasses.replace(check, operands=(Ref(name), operands[1])), given, None,
                 f"the stream taken from the input of the {norm.module} the line applied (a pre-norm layer: no "
                 f"snapshot shows {source.name(operands[0])})")


def _local_read(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor,
                order: tuple[int, ...] | None) -> Bound | None:
    """A residual sum whose sublayer output no snapshot shows and no module call of the line gave, the sublayer run on
    lines before (``y = self.dropout(y)``, then ``x = x + y``): that operand is the one tensor the line read (a local,
    as it was before the line ran) of the step's shape that is none of the captured operands nor their sum, the
    stream; None where
    there is not exactly one, or another operand is not captured. A line that reads only the sublayer output
    (``x = y``) leaves the stream out: named by the step's own check."""
    operands = check.operands
    if not all(source.has(ref) for ref in operands[:-1]):
        return None
    captured = [source.t(ref) for ref in operands[:-1]]
    read = [(call.module, in_order(output, order)) for call in calls if call.kind == ModuleKind.LOCAL
            and len(call.outputs) == 1 and isinstance(output := call.outputs[0], torch.Tensor)
            and output.is_floating_point() and tuple(output.shape) == tuple(main.shape)]
    # the stream is a captured operand, or their sum (``x += res``, ``res`` the first residual sum where the catalogue
    # adds the block input, the attention's and the MLP's outputs): neither is the sublayer output
    stream = sum(captured[1:], captured[0]) if captured else None
    others = [(local, tensor) for local, tensor in read if not any(same_tensor(tensor, c) for c in (*captured, stream))]
    if len(others) != 1:
        return None
    local, tensor = others[0]
    name = f"the sublayer's output, your `{local}` the line read"
    given = Given(source, {**source.tensors, name: tensor})
    return Bound(SublayerFromCall(out=getattr(check, "out"), operands=(*operands[:-1], Ref(name)), step=check,
                                 called=f"`{local}`"), given, None,
                 f"the sublayer's output taken from `{local}`, the tensor the line read (no snapshot shows it)")


def _table_read(check: Any, calls: Sequence[ModuleCall], source: TensorDict) -> Bound | None:
    """A sum whose last operand no snapshot shows, where the line read one table by attribute for it (positions:
    ``x = x + self.pe[:x.size(0), :]``, a sinusoid buffer): that operand as the table's first rows, one per position,
    the size-1 axes of the table's own layout dropped; None where the line read no such table, or several."""
    if not isinstance(check, SumOf) or not all(source.has(ref) for ref in (check.out, *check.operands[:-1])):
        return None
    first = source.t(check.operands[0])
    if first.dim() != 3 or source.t(check.out).shape != first.shape:
        return None
    axis = _positions_axis(source.t(check.out) - first)
    tables = [(call.module, table.squeeze()) for call in calls if call.kind == ModuleKind.READ
              and isinstance(table := call.params.get("weight"), torch.Tensor) and table.squeeze().dim() == 2
              and table.squeeze().shape[-1] == first.shape[-1] and table.squeeze().shape[0] >= first.shape[axis]]
    if len(tables) != 1:
        return None
    read, table = tables[0]
    rows = table[:first.shape[axis]]
    missing = source.name(check.operands[-1])
    name = f"{missing}, the first {len(rows)} rows of `{read}`"
    given = Given(source, {**source.tensors, name: rows if axis == 1 else rows[:, None]})
    return Bound(dataclasses.replace(check, operands=(*check.operands[:-1], Ref(name))), given, None,
                 f"{missing} taken from `{read}`, the table the line read, its first {len(rows)} rows (no captured "
                 "snapshot shows it)")


def _added_inside(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor,
                  order: tuple[int, ...] | None) -> Bound | None:
    """A sum of two operands whose last no snapshot shows, made inside a module the line called on the first
    (``x = self.pos_embed(x)``, a buffer of positions added in its ``forward``): where the term the module added is
    the same for every item (it depends on the position only), the step is read as its input plus positions whose
    table is not captured (``PlusParameter`` without its table: a sinusoid table of amplitude 1 passes, of amplitude 2
    is "positions added twice"); None where no such call, or the term differs between the items (a residual added
    inside a wrapper: a sublayer's output)."""
    if not isinstance(check, SumOf) or len(check.operands) != 2 or not source.has(check.operands[0]):
        return None
    first = source.t(check.operands[0])
    inside = [call for call in calls if call.kind == ModuleKind.USER and call.inputs and call.outputs
              and isinstance(given := call.inputs[0], torch.Tensor) and same_tensor(in_order(given, order), first)
              and isinstance(made := call.outputs[0], torch.Tensor) and same_tensor(in_order(made, order), main)]
    if len(inside) != 1 or first.dim() != 3 or first.shape[0] < 2 or main.shape != first.shape:
        return None  # the step's own shape first: a line may capture values that are no sum of its operands
    term = main.double() - first.double()
    if not close(term, term[:1].expand_as(term), "")[0]:
        return None
    missing, module = source.name(check.operands[-1]), inside[0].module
    # the module's one table of positions (a row per position at least, of the step's width), where it holds one
    tables = {name: table for name, table in inside[0].params.items() if isinstance(table, torch.Tensor)
              and table.dim() >= 2 and table.shape[-1] == first.shape[-1] and table.shape[-2] >= first.shape[1]
              and table[..., 0, :].numel() == first.shape[-1]}
    table = {missing: next(iter(tables.values()))} if len(tables) == 1 else {}
    own = f", its table `{module}.{next(iter(tables))}`" if table else ""
    return Bound(PlusParameter(out=getattr(check, "out"), x=check.operands[0], parameter=ParamRef(missing)),
                 Given(source, source.tensors, params=table), None,
                 f"{missing} added inside `{module}`, the module the line called on {source.name(check.operands[0])}"
                 f"{own} (no captured snapshot shows it)")


def _positions_axis(term: torch.Tensor) -> int:
    """The axis of (B, T, C) along which the term added runs through the positions: the other one it is the same along
    (a sequence-first script's (T, B, C) read batch-first: axis 0); axis 1 where that does not tell."""
    same = [axis for axis in (0, 1) if close(term, term.narrow(axis, 0, 1).expand_as(term), "")[0]]
    return 0 if same == [1] else 1


def _stream_name(record: str, norm: Any) -> str:
    """The stream a norm was applied to, as its diagnosis names it (``x (#6), the input of the LayerNorm ...``)."""
    return f"{record}, the input of the {norm.module} the line applied"


def _stream_norms(calls: Sequence[ModuleCall], main: torch.Tensor) -> list[ModuleCall]:
    """The one stream finder: the norm calls the line applied to a tensor of the step's shape (a LayerNorm, or a call
    that looks like one), whose input is the stream a pre-norm residual carries (``x + self.attn(self.attn_ln(x))``).
    The stream operand no snapshot shows is taken from the one that fed a sublayer (``_fed_norm``); the captured step
    that is the stream is the one equal to the input of the only one (``_captured_stream``)."""
    return [call for call in calls if (call.kind == ModuleKind.LAYER_NORM or _norm_like(call)) and call.inputs
            and isinstance(call.inputs[0], torch.Tensor) and tuple(call.inputs[0].shape) == tuple(main.shape)]


def _fed_norm(norms: Sequence[ModuleCall], calls: Sequence[ModuleCall], main: torch.Tensor) -> Any:
    """Of ``norms``, the LayerNorm (or a module of the user's that looks like one) whose output another call of the
    line was given: its input is the stream the residual carries. None where none feeds a call, several do, or the
    norm's output is the step (a post-norm line: its input is the sum, not the stream)."""
    fed = [norm for norm in norms if norm.kind in (ModuleKind.LAYER_NORM, ModuleKind.USER) and norm.outputs
           and isinstance(norm.outputs[0], torch.Tensor) and not same_tensor(norm.outputs[0], main)
           and any(other is not norm and other.inputs and same_tensor(other.inputs[0], norm.outputs[0])
                   for other in calls if other.kind in SUBLAYER_KINDS)]
    return fed[0] if len(fed) == 1 else None


def _captured_stream(norms: Sequence[ModuleCall], order: tuple[int, ...] | None, source: TensorDict) -> str | None:
    """The record name of the captured step equal to the input of the one norm of ``norms`` (``x +
    self.mlp(self.ln_2(x))``: ``x``, the stream); None where there is not exactly one."""
    stream = norms[0].inputs[0] if len(norms) == 1 else None
    if stream is None:
        return None
    read = in_order(stream, order).double()
    equal = [name for name, tensor in source.tensors.items() if isinstance(tensor, torch.Tensor)
             and tensor.shape == read.shape and tensor.is_floating_point() and close(tensor.double(), read, "")[0]]
    return equal[0] if equal else None


def _sublayer_call(calls: Sequence[ModuleCall], main: torch.Tensor, captured: list[torch.Tensor]) -> Any:
    """The call whose first output is the sublayer's: of the step's shape, no LayerNorm's, not a call that returns
    the step from the stream it was given (a wrapper adding the residual inside); the shallowest, then the last."""
    found = []
    for call in calls:
        output = call.outputs[0] if call.outputs else None
        if (call.kind not in SUBLAYER_KINDS or not isinstance(output, torch.Tensor) or not output.is_floating_point()
                or tuple(output.shape) != tuple(main.shape) or _norm_like(call)):
            continue
        if same_tensor(output, main) and (not captured
                                          or any(same_tensor(t, c) for t in call.inputs for c in captured)):
            continue  # the step itself, from the stream: a wrapper (or, without the stream captured, cannot tell)
        found.append(call)
    if not found:
        return None
    depth = min(call.depth for call in found)
    return [call for call in found if call.depth == depth][-1]


def _norm_like(call: Any) -> bool:
    params = [p for p in call.params.values() if isinstance(p, torch.Tensor)]
    return bool(params) and all(p.dim() == 1 for p in params) and len(params) <= 2


