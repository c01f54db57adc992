"""Learned positions in the encoder–decoder numbering (which names sinusoid tables): a positions step whose line
looks the positions up in an embedding table of its own (``x + self.embed_positions(pos_ids)``, BART's), read from the
call as its input plus that lookup's rows, the same for every item, the embedding scaled on the way or not (fitted).
Named where the lookup was added twice, or where its row 0 alone was added to every token (position_rows.py);
unrecognised where none fits.

A ViT's positions step reads the lookup too where an unmarked statement before it made it (round twenty-three's
Bhav7: ``pos_embeddings = self.position_embeddings(torch.arange(N1))``, then ``x = x + pos_embeddings  # BREAKPOINT
S07``: values.py ``PlusParameter``, whose input is ``x``): the step is its input plus the rows of the Embedding's
weight the positions pick, not only "the same term for every item"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.base import THIS, Check, close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.position_rows import FIRST_ROW_EVERYWHERE, TESTED, first_row_everywhere
from transformer_trace.sources import Ref, TensorDict, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.binding import Bound, Given
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import embedding_table


def _with_term(check: Any, s: TensorSource, times: int) -> tuple[torch.Tensor, str]:
    """The step as its input (times a factor fitted by least squares: 1, or √C where the lookup is scaled on the
    way) plus ``times`` the positions' rows."""
    out, before = s.t(check.out), s.t(check.before)
    term = s.t(check.term).expand_as(out)
    rest = out - times * term
    scale = float((rest * before).sum() / (before * before).sum().clamp_min(1e-30))
    words = "" if abs(scale - 1) < 1e-4 else f", the embedding scaled by {scale:.4g} on the way"
    return scale * before + times * term, words


def _added_twice(check: Any, s: TensorSource) -> Fit | None:
    expected, words = _with_term(check, s, 2)
    fits, detail = close(s.t(check.out), expected, f"its input plus twice the position lookup{words}")
    return Fit(fits, f"your positions are added twice ({detail})" if fits else detail)


def _first_row(check: Any, s: TensorSource) -> Fit | None:
    return first_row_everywhere(s.t(check.out), s.t(check.before), s.t(check.term), "the position lookup",
                                s.name(check.out))


@dataclass(frozen=True, kw_only=True)
class LearnedPositionsAdded(Check):
    """``out`` is ``before`` (times a factor fitted) plus ``term``: the rows of a position table the line looked up,
    the same for every item."""
    CLAIM = "is the embeddings plus a learned position table's rows"

    BUG_FORMS = (BugForm("positions added twice", "the output vs its input plus twice the lookup", _added_twice),
                 BugForm(FIRST_ROW_EVERYWHERE, TESTED, _first_row))
    SUBSTITUTES = False  # the term is the call's own output

    out: Ref = THIS
    before: Ref
    term: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        expected, words = _with_term(self, s, 1)
        passed, detail = close(s.t(self.out), expected, f"its input plus the position lookup{words}")
        return ("the added term is a learned position table's rows (an embedding of the positions), the same for "
                "every item"), passed, detail


def _positions(ids: torch.Tensor | None) -> bool:
    """Whether an embedding's input is positions: consecutive integers along its last axis, the same in every row."""
    if ids is None or ids.is_floating_point() or ids.numel() < 2:
        return False
    rows = ids.reshape(-1, ids.shape[-1]).long()
    return bool((rows == rows[:1]).all()) and bool((rows[0].diff() == 1).all())


def learned_positions(check: Check, calls: Sequence[ModuleCall], source: TensorDict,
                      main: torch.Tensor | None) -> Bound | None:
    """A positions step (``check`` reads ``out`` and ``before``, or ``x``: what the positions were added to) whose
    line, or an unmarked statement whose output it read, called an embedding of the positions (an ``nn.Embedding``,
    or a module of the user's that is one): read as ``LearnedPositionsAdded`` of the rows of that embedding's table the
    positions pick (its output, where the table does not give it back); None where no such call was made."""
    before = getattr(check, "before", None) or getattr(check, "x", None)
    if main is None or not isinstance(before, Ref) or not source.has(before):
        return None
    lookups = [c for c in calls if (c.kind == ModuleKind.EMBEDDING or c.kind == ModuleKind.USER
                                    and embedding_table(c) is not None)
               and c.inputs and _positions(c.inputs[0]) and c.outputs and c.outputs[0] is not None
               and c.outputs[0].shape[-1] == main.shape[-1] and c.outputs[0].shape[-2] == main.shape[-2]]
    if len(lookups) != 1:
        return None  # none, or several: which is the positions' is not told
    call, out = lookups[0], getattr(check, "out", THIS)
    term, words = _table_rows(call)
    name = f"{source.name(out)}@{call.module}.output"
    given = Given(source, {**source.tensors, name: term})
    return Bound(LearnedPositionsAdded(out=out, before=before, term=Ref(name)), given, None, words)


def _table_rows(call: ModuleCall) -> tuple[torch.Tensor, str]:
    """The rows of the call's table its positions pick (``weight[ids]``), with the words that say so; its output
    where the table is not kept or does not give it back (parameters written late, weights.py)."""
    output, ids = call.outputs[0], call.inputs[0]
    assert output is not None and ids is not None  # a lookup kept by ``learned_positions``
    table = call.params.get("weight") if call.kind == ModuleKind.EMBEDDING else None
    if table is not None and table.dim() == 2 and int(ids.max()) < table.shape[0]:
        rows = table[ids.long()]
        if rows.shape == output.shape and bool(torch.equal(rows.to(output.dtype), output)):
            first, last = int(ids.min()), int(ids.max())
            return rows.to(output.dtype), (f"rows {first}–{last} of the weight of the {call.module} (an embedding of "
                                           "the positions), looked up by the positions it was given")
    return output, f"the rows the {call.module} it called looked up (the positions {call.module} was given)"
