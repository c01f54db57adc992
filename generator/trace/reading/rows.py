"""The sequence a pooled row was taken from, where no snapshot shows it (the ViT's S24 on a model without a final
LayerNorm of its own line): the one (B, N, D) sequence the marked line read, read in the step's layout, with the
LayerNorm the line applied to it. Three forms of one computation, since a LayerNorm acts on each token alone:
``self.norm(x)[:, 0]`` (the norm, then the pick), ``self.ln_post(x[:, 0, :])`` (CLIP: the pick, then the norm: the
same norm applied to the whole sequence gives the same row) and ``x[0]`` of a sequence-first (N, B, D) tensor (row 0 of
the tokens axis: read batch-first, (B, N, D)). Where the line read only the picked row (``x = self.ln(x)`` after an
unmarked ``x = x[0]``: labml.ai's ViT), the sequence is the captured one of the stack's last layer that holds that row,
through the same norm. Where the sequence is a captured snapshot (the last block's output marked as the final sequence)
and the line normalised the row it picked from it (``self.layer_norm(z[:, 0, :])``: the model's final LayerNorm
applied to the class row alone), the sequence is that snapshot through the same norm (``normalised_capture``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import rebuild


@dataclass(frozen=True)
class PooledFrom:
    """The sequence a row was pooled from (batch-first), and how it was read, in words: "as `x`, the sequence …"."""

    sequence: torch.Tensor
    name: str  # the sequence in the student's words: `x`, or `ln_post(x)`
    how: str


def pooled_from(calls: Sequence[ModuleCall], row: torch.Tensor | None,
                captured: Mapping[str, torch.Tensor] | None = None) -> PooledFrom | None:
    """The one 3-D sequence the line read (a local variable), batch-first where ``row`` (the step, (B, D)) says it was
    sequence-first, after the LayerNorm the line applied to it or to the row picked from it; where it read none, the
    ``captured`` sequence of the last layer whose row the line normalised; None where none or several are found."""
    read = [c for c in calls if c.kind == ModuleKind.LOCAL and len(c.outputs) == 1 and c.outputs[0] is not None
            and c.outputs[0].dim() == 3]
    if not read and captured:
        return _row_normalised(calls, captured)
    if len(read) != 1:
        return None  # none or several sequences read: which one is the source is not known
    sequence, name = read[0].outputs[0], read[0].module
    assert sequence is not None  # filtered above
    first = ""
    if (row is not None and row.dim() == 2 and sequence.shape[0] != row.shape[0] == sequence.shape[1]
            and sequence.shape[-1] == row.shape[-1]):
        sequence, first = sequence.transpose(0, 1), " (sequence-first (N, B, D), read as (B, N, D))"
    norm = _norm_of(calls, read[0].outputs[0])
    if norm is not None and norm[1]:  # the norm applied to the whole sequence: its output, read in the same layout
        output = norm[0].outputs[0]
        assert output is not None
        sequence = output.transpose(0, 1) if first else output
        how = (f"as the output of `{norm[0].module}`, the norm the line applied to `{name}` before picking the row "
               f"(the norm and the row pick on one line){first}")
        return PooledFrom(sequence, f"{norm[0].module}({name})", how)
    if norm is not None:  # the norm applied to the picked row: the same norm on every token of the sequence
        module = rebuild(norm[0], ModuleKind.LAYER_NORM)
        if module is not None:
            normed = F.layer_norm(sequence.float(), module.normalized_shape, module.weight.float(),
                                  module.bias.float(), module.eps).to(sequence.dtype)
            how = (f"as `{norm[0].module}` applied to every row of `{name}`, the sequence the line read (the row "
                   f"picked first, then normalised: a LayerNorm acts on each token alone){first}")
            return PooledFrom(normed, f"{norm[0].module}({name})", how)
    return PooledFrom(sequence, name, f"as `{name}`, the sequence the line read (no captured snapshot shows it){first}")


def normalised_capture(calls: Sequence[ModuleCall], sequence: torch.Tensor, name: str) -> PooledFrom | None:
    """The captured ``sequence`` (B, N, D) through the one LayerNorm the line applied to it or to a row picked from it;
    None where the line applied none, or where the sequence is normalised already (every token of mean 0 and variance
    1: a second norm over a final norm is not the final norm's form)."""
    norm = _norm_of(calls, sequence)
    module = rebuild(norm[0], ModuleKind.LAYER_NORM) if norm is not None else None
    if norm is None or module is None or _standardised(sequence):
        return None
    normed = F.layer_norm(sequence.float(), module.normalized_shape, module.weight.float(), module.bias.float(),
                          module.eps).to(sequence.dtype)
    how = (f"as `{norm[0].module}` applied to every row of {name}, the sequence captured before the norm the line "
           f"applied to the row it picked (a LayerNorm acts on each token alone)")
    return PooledFrom(normed, f"{norm[0].module}({name})", how)


def pooled_norm(calls: Sequence[ModuleCall], sequence: torch.Tensor) -> SimpleNamespace | None:
    """The one LayerNorm the line applied to a mean of ``sequence``'s rows (``fc_norm(x.mean(1))``, every row or those
    after row 0; or before the last, a bug form's: RowEquals ``_wrong_rows``), rebuilt from its call; None where it
    applied none or several. A LayerNorm of the mean is not the mean of the normalised rows, so the pooled step is read
    as that norm of the pooled vector (RowEquals ``norm``)."""
    means = ([sequence.mean(1), sequence[:, 1:].mean(1), sequence[:, :-1].mean(1)]
             if sequence.dim() == 3 and sequence.shape[1] > 1 else [])
    found = [call for call in calls if call.kind in (ModuleKind.LAYER_NORM, ModuleKind.USER) and call.inputs
             and call.inputs[0] is not None and call.inputs[0].dim() == 2
             and any(call.inputs[0].shape == mean.shape
                     and torch.allclose(call.inputs[0].double(), mean.double(), atol=1e-5) for mean in means)]
    return rebuild(found[0], ModuleKind.LAYER_NORM) if len(found) == 1 else None


def pooled_scorer(calls: Sequence[ModuleCall], sequence: torch.Tensor) -> SimpleNamespace | None:
    """The one Linear the line applied to ``sequence`` (B, N, D) giving each row fewer scores than it has features
    (sequence pooling's ``attention_pool``, D -> 1), rebuilt from its call; None where it applied none or several."""
    found = [call for call in calls if call.kind == ModuleKind.LINEAR and call.inputs and call.outputs
             and call.inputs[0] is not None and call.outputs[0] is not None and sequence.dim() == 3
             and call.inputs[0].shape == sequence.shape and call.outputs[0].shape[:-1] == sequence.shape[:-1]
             and call.outputs[0].shape[-1] < sequence.shape[-1]
             and torch.allclose(call.inputs[0].double(), sequence.double(), atol=1e-5)]
    return rebuild(found[0], ModuleKind.LINEAR) if len(found) == 1 else None


def _standardised(sequence: torch.Tensor) -> bool:
    """Whether every token of ``sequence`` already has mean 0 and variance 1 over its features (a LayerNorm's output
    before any affine step)."""
    values = sequence.double()
    mean, variance = values.mean(-1), values.var(-1, unbiased=False)
    return bool(mean.abs().max() < 1e-3 and (variance - 1).abs().max() < 1e-2)


def _norm_of(calls: Sequence[ModuleCall], sequence: torch.Tensor | None) -> tuple[ModuleCall, bool] | None:
    """The one LayerNorm the line called on ``sequence`` (True) or on a row of it (False, a 2-D input whose rows are
    rows of it); None where there is not exactly one."""
    found = []
    for call in calls:
        if call.kind not in (ModuleKind.LAYER_NORM, ModuleKind.USER) or not call.inputs or not call.outputs:
            continue
        given, output = call.inputs[0], call.outputs[0]
        if given is None or output is None or sequence is None:
            continue
        if given.shape == sequence.shape and torch.equal(given, sequence) and output.dim() == 3:
            found.append((call, True))
        elif given.dim() == 2 and output.dim() == 2 and _rows_of(given, sequence):
            found.append((call, False))
    return found[0] if len(found) == 1 else None


def _rows_of(rows: torch.Tensor, sequence: torch.Tensor) -> bool:
    """Whether each row of ``rows`` (B, D) is a row of ``sequence`` at one position (either axis order)."""
    for axis in (1, 0):
        if sequence.shape[axis] and rows.shape == sequence.select(axis, 0).shape:
            if any(torch.equal(rows, sequence.select(axis, k)) for k in range(sequence.shape[axis])):
                return True
    return False


def _row_normalised(calls: Sequence[ModuleCall], captured: Mapping[str, torch.Tensor]) -> PooledFrom | None:
    """The line normalised a row picked on an earlier line: the sequence is the captured (B, N, D) tensor of the
    stack's last layer holding that row (a row of an earlier layer's tensor is not taken: the final sequence is the
    last layer's), through the norm the line called; None where there is no such norm, no such tensor, or the tensors
    holding it disagree on which row it is."""
    norms = [c for c in calls if c.kind in (ModuleKind.LAYER_NORM, ModuleKind.USER) and c.inputs and c.outputs
             and c.inputs[0] is not None and c.inputs[0].dim() == 2 and c.outputs[0] is not None
             and c.outputs[0].dim() == 2]
    module = rebuild(norms[0], ModuleKind.LAYER_NORM) if len(norms) == 1 else None
    if module is None:
        return None
    row = norms[0].inputs[0]
    assert row is not None  # filtered above
    sequences = {name: t for name, t in captured.items() if isinstance(t, torch.Tensor) and t.dim() == 3
                 and t.shape[0] == row.shape[0] and t.shape[2] == row.shape[1]}
    last = max((_layer(name) for name in sequences), default=-1)
    holding = [(name, k) for name, t in sequences.items() if _layer(name) == last
               for k in range(t.shape[1]) if torch.equal(t[:, k].to(row.dtype), row)]
    if not holding or len({k for _, k in holding}) != 1:
        return None
    name = holding[0][0]
    sequence = captured[name]
    normed = F.layer_norm(sequence.float(), module.normalized_shape, module.weight.float(), module.bias.float(),
                          module.eps).to(sequence.dtype)
    how = (f"as `{norms[0].module}` applied to every row of {name}, the last layer's sequence that holds the row the "
           f"line normalised (the row picked on an earlier line; a LayerNorm acts on each token alone)")
    return PooledFrom(normed, f"{norms[0].module}({name})", how)


def _layer(name: str) -> int:
    """The layer index a record name carries (``blocks.1.output``: 1), -1 for none."""
    return max((int(part) for part in name.split(".") if part.isdigit()), default=-1)
