"""The run's one layout (issue 40, point 3): whether the script keeps its tensors batch-first, as the catalogue names
them (B, T, C), or sequence-first (T, B, C), as `nn.Transformer` and much older code do, and where a ViT's class token
is among its tokens, decided once per run from every captured step together, then used to read every step, every hit,
and the module calls and locals of the marked lines.

A per-tensor reading cannot tell (T, B, C) from (B, T, C): each such tensor alone binds B and T the wrong way round,
or fits "the same dimensions in another order" while the script's other steps are read the other way. So both readings
of the whole run are tried (``read_run_layout``): each binds the named dimensions from all the captured shapes (the
sequence-first one with the first two axes of every (B, <positions>, …) step swapped; the heads h from a step that
folds them into its batch axis, (B·h, T, hs), where no step shows them in their own) and counts the steps that then
fit no layout and the steps that fit only with their axes permuted. The reading with fewer misfits, then fewer
permutations, is the run's. Where the shapes cannot tell (every such step turned alike, or B = T), the modules the
marked lines called decide where they say (`nn.MultiheadAttention`'s ``batch_first``, with the steps' sizes or a step
holding the module's very input), else the catalogue's batch-first. Some steps that read as captured only
sequence-first while others read only batch-first are a contradiction: the run keeps the reading that scores better,
and the overview names the steps of each side in one line instead of a guess per step. The class token's place comes
from the values (``_with_class_token``); a step of N1 tokens that holds the patches alone (the class token joined after
the positions were added) is read with the class token's row as it joined in front. Per-head keys stored transposed
for the product where the shape cannot tell (T = hs) are read so from the scores' numbers (stored_transposed.py).
What each decision rests on is shown in the overview's "What was recognised"
(``RunLayout.recognised``), with the steps read with their heads folded into the batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from transformer_trace.models.legend import Legend
from transformer_trace.models.recording import Role
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.fold_order import heads_major, unfolded
from transformer_trace.trace.reading.stored_transposed import Transposed, stored_transposed
from transformer_trace.trace.reading.extra_tokens import ExtraTokens, find_extra_tokens
from transformer_trace.trace.reading.late_class_token import LateClassToken, class_token_read, find_late_class_token
from transformer_trace.trace.reading.merged_tokens import MergedTokens, find_merged_tokens
from transformer_trace.trace.reading.calls_say import batch_first_said, one_head_of_a_batch
from transformer_trace.trace.reading.verify import Layout, LayoutStatus, bind_dims, layout

# the named axes that count positions (tokens, patches, source and target lengths): what sequence-first puts first
SEQUENCE_AXES = frozenset({"T", "S", "N", "N1", "L", "Lq", "Lk"})
BATCH_FIRST, SEQUENCE_FIRST = "batch-first", "sequence-first"
CLASS_FIRST, CLASS_LAST, CLASS_ABSENT = "first", "last", "absent"
CLASS_PLACES = {CLASS_FIRST: "first, before the patches",
                CLASS_LAST: ("last, after the patches: every step's tokens read with it first, as the catalogue "
                             "names them"),
                CLASS_ABSENT: "none: every step holds the patches alone"}


@dataclass(frozen=True)
class StepShape:
    """One captured tensor as evidence for the run's layout: the step's label, its named shape, the shape captured,
    whether the step shows the first batch item of its tensor (a snapshot indexed ``[0]``), and what the catalogue
    declares it to be (``Ref.roles``: keys or values may have fewer heads than the queries)."""

    step: str
    named: tuple[str, ...]
    shape: tuple[int, ...]
    first_item: bool = False
    value: torch.Tensor | None = field(default=None, compare=False)  # the tensor itself, for a module's input
    roles: frozenset[Role] = frozenset()
    hits: tuple[torch.Tensor, ...] = field(default=(), compare=False)  # its value at every hit of its line


def turned(named: Sequence[str], ndim: int, first_item: bool) -> bool:
    """Whether a sequence-first run keeps this tensor with its positions before its batch axis: a (B, <positions>, …)
    step captured whole, or a first-item step (<positions>, …) captured with its batch axis (then second)."""
    if first_item and ndim == len(named) + 1:
        return bool(named) and named[0] in SEQUENCE_AXES
    return ndim == len(named) >= 2 and named[0] == "B" and named[1] in SEQUENCE_AXES


@dataclass(frozen=True)
class _Reading:
    """The whole run read one way: the dimensions its shapes bind so, the steps that then fit no layout, the steps
    that fit only with their axes in another order, and the steps read with their heads folded into the batch."""

    dims: dict[str, int]
    misfits: tuple[str, ...]
    permuted: tuple[str, ...]
    folded: tuple[str, ...]
    direct: tuple[str, ...]  # steps with a (B, <positions>, …) tensor that fits as it is read, no axis permuted

    @property
    def score(self) -> tuple[int, int]:
        return len(set(self.misfits)), len(set(self.permuted))


def _read_as(shapes: Sequence[StepShape], legend: Legend, sequence_first: bool, one_head_each: bool) -> _Reading:
    def arranged(s: StepShape) -> tuple[int, ...]:
        if sequence_first and turned(s.named, len(s.shape), s.first_item):
            return (s.shape[1], s.shape[0], *s.shape[2:])
        return s.shape

    named = [(s.named, arranged(s)) for s in shapes]
    dims = _with_folded_heads(shapes, bind_dims(named, legend, [s.roles for s in shapes], one_head_each), legend)
    misfits, permuted, folded, direct = [], [], [], []
    for s in shapes:
        found = layout(torch.empty(arranged(s), device="meta"), s.named, dims, legend, first_item=s.first_item,
                       roles=s.roles)
        if found.canonical is None and sequence_first and _ids_as_given(s, dims, legend):
            continue  # token IDs batch-first as given: the stream is turned only after their lookup
        if found.status in (LayoutStatus.MISMATCH, LayoutStatus.UNBOUND) and found.canonical is None:
            misfits.append(s.step)
        elif _permuted(arranged(s), found):
            permuted.append(s.step)
        elif turned(s.named, len(s.shape), s.first_item):
            direct.append(s.step)
        if found.status is LayoutStatus.LAYOUT and "B·h" in found.note:
            folded.append(s.step)
    return _Reading(dims, tuple(misfits), tuple(permuted), tuple(folded), tuple(direct))


def _ids_as_given(s: StepShape, dims: dict[str, int], legend: Legend) -> bool:
    """Whether a step of integers (token IDs) fits batch-first as captured, where the run reads it sequence-first."""
    return (s.value is not None and not s.value.is_floating_point() and turned(s.named, len(s.shape), s.first_item)
            and layout(torch.empty(s.shape, device="meta"), s.named, dims, legend, first_item=s.first_item,
                       roles=s.roles).canonical is not None)


def _with_folded_heads(shapes: Sequence[StepShape], dims: dict[str, int], legend: Legend) -> dict[str, int]:
    """``dims`` with the heads h (and what follows from it) bound from a step whose heads are folded into its batch
    axis, (B·h, T, hs) for (B, h, T, hs), where no step shows h in its own axis: h = its first size / B, where the
    step then reads whole. The first such step decides; unchanged where none does."""
    batch = dims.get("B")
    if "h" not in legend or "h" in dims or not batch:
        return dims
    for s in shapes:
        if len(s.named) < 3 or s.named[:2] != ("B", "h") or len(s.shape) != len(s.named) - 1 or s.shape[0] % batch:
            continue
        found = _derived({**dims, "h": s.shape[0] // batch}, legend)
        if layout(torch.empty(s.shape, device="meta"), s.named, found, legend).canonical is not None:
            return found
    return dims


def _derived(dims: dict[str, int], legend: Legend) -> dict[str, int]:
    """``dims`` with every size that follows from them by the legend's relations (hs = C / h)."""
    while legend.derive_into(dims):
        pass
    return dims


def _permuted(shape: tuple[int, ...], found: Layout) -> bool:
    """Whether the tensor fits only with its axes in another order (the same sizes, not where the name has them)."""
    expected = found.expected
    return (found.status is LayoutStatus.LAYOUT and expected is not None and len(shape) == len(expected)
            and shape != expected and sorted(shape) == sorted(expected))


@dataclass(frozen=True)
class RunLayout:
    """The run's one reading of its tensors' layout: sequence-first or not, the dimensions bound so, what the decision
    rests on, and the contradiction between steps where there is one (one line for the overview, else "")."""

    dims: dict[str, int] = field(default_factory=dict)
    sequence_first: bool = False
    rests_on: str = ""
    contradiction: str = ""
    folded: tuple[str, ...] = ()  # steps whose heads are folded into the batch axis (B·h, …)
    heads_major: str = ""  # why they are folded head-major, (h·B, …) (fold_order.py); "" for batch-major
    class_token: str = ""  # where the class token is among the tokens (a ViT's N1 axis): first, last, absent, ""
    class_rests_on: str = ""
    transposed: tuple[Transposed, ...] = ()  # per-head keys stored (B, h, hs, T) where T = hs (stored_transposed.py)
    # the class token joined after the positions were added: the steps named with N1 tokens that hold the N patches
    # alone, and the class token's row as it joined (B, 1, C), put in front of them when they are read
    patches_alone: tuple[str, ...] = ()
    joining_row: torch.Tensor | None = field(default=None, compare=False)
    extra_tokens: ExtraTokens | None = None  # tokens of the model's own joining after the embedding steps
    late_class: LateClassToken | None = None  # the class token joining after the blocks (late_class_token.py)
    merged_tokens: MergedTokens | None = None  # tokens merged inside the blocks (merged_tokens.py)

    def dims_for(self, named: Sequence[str], shape: Sequence[int]) -> dict[str, int]:
        """The dimensions a step is read with: the run's, or, for a step before extra tokens joined (its tokens axis
        N1 holds N + 1 of the run's N1 + k) or after tokens were merged, its own token count."""
        extra, tokens = self.extra_tokens, self.dims.get("N1")
        if self.merged_tokens is not None:
            return dict(own) if (own := self.merged_tokens.dims_for(self.dims, named, shape)) is not self.dims \
                else self.dims
        if extra is None or tokens is None or "N1" not in named:
            return self.dims
        axis = list(named).index("N1")
        before = tokens - extra.count
        if axis >= len(shape) or shape[axis] != before:
            return self.dims
        return {**self.dims, "N1": before, **({"N": before - 1} if "N" in self.dims else {})}

    @property
    def kind(self) -> str:
        return SEQUENCE_FIRST if self.sequence_first else BATCH_FIRST

    def turns(self, named: Sequence[str], ndim: int, first_item: bool) -> bool:
        """Whether this run reads the tensor with its first two axes swapped."""
        return self.sequence_first and turned(named, ndim, first_item)

    def turned_call(self, call: ModuleCall) -> ModuleCall:
        """A module call of a marked line with its (positions, batch, …) inputs and outputs read as the steps are, so a
        check comparing them with the steps' tensors compares like with like; a module that reads its own layout
        (``batch_first``: nn.MultiheadAttention, trace/reading/attention_calls.py) is left as it ran."""
        if not (self.sequence_first or self.class_token == CLASS_LAST) or "batch_first" in call.attrs:
            return call
        return replace(call, inputs=[self.as_called(t) for t in call.inputs],
                       outputs=[self.as_called(t) for t in call.outputs], params=self.tables_class_first(call))

    def tables_class_first(self, call: ModuleCall) -> dict[str, Any]:
        """A tensor the line read by attribute (a position table added to the tokens) with one row per token, read as
        the steps it is added to are: the class token's row, kept last where the run keeps the class token last, moved
        first (its width axis, the last, never). Module weights are left as they are."""
        if call.kind != ModuleKind.READ or self.class_token != CLASS_LAST:
            return call.params
        tokens = self.dims.get("N1")
        return {name: value.roll([1] * len(axes), dims=axes)
                if isinstance(value, torch.Tensor) and (axes := [i for i in range(value.dim() - 1)
                                                                 if value.shape[i] == tokens]) else value
                for name, value in call.params.items()}

    def as_called(self, tensor: torch.Tensor | None) -> torch.Tensor | None:
        """A tensor a marked line's module took or gave (or a local it read), read by its sizes as the run reads its
        steps: (positions, batch, …) turned batch-first, and a class token kept last moved first on every axis of
        the N1 tokens' size after the first."""
        positions = {self.dims[axis] for axis in SEQUENCE_AXES if axis in self.dims}
        if tensor is None or tensor.dim() < 2:
            return tensor
        if (tokens := self.merged_positions_first(tensor, positions)) is not None:
            return tokens
        if self.sequence_first and tensor.shape[1] == self.dims.get("B") and tensor.shape[0] in positions:
            tensor = tensor.transpose(0, 1)
        axes = [i for i in range(1, tensor.dim()) if tensor.shape[i] == self.dims.get("N1")]
        if self.class_token == CLASS_LAST and axes:  # its token axes: every one of the N1 tokens' size
            tensor = tensor.roll([1] * len(axes), dims=axes)
        return tensor

    def merged_positions_first(self, tensor: torch.Tensor, positions: set[int]) -> torch.Tensor | None:
        """A sequence-first run's (L·B, X) tensor, its positions and batch merged in one axis positions-major (a
        feed-forward run on `x.view(-1, C)` of a (L, B, C) stream), read batch-first as (B, L, X); else None."""
        B = self.dims.get("B")
        if not (self.sequence_first and B and tensor.dim() == 2 and tensor.shape[0] % B == 0):
            return None
        L = tensor.shape[0] // B
        if L < 2 or L not in positions or tensor.shape[1] == tensor.shape[0]:
            return None
        return tensor.reshape(L, B, tensor.shape[1]).transpose(0, 1)

    def as_read(self, step: StepShape) -> torch.Tensor:
        """A step's captured value with its first two axes as the run reads them (its value: required)."""
        assert step.value is not None
        turn = self.turns(step.named, step.value.dim(), step.first_item)
        return step.value.transpose(0, 1) if turn else step.value

    def class_first(self, canonical: torch.Tensor, named: Sequence[str]) -> torch.Tensor:
        """A step in the catalogue's layout with the class token first on each of its token axes (N1), where the run
        keeps it last."""
        axes = [i for i, name in enumerate(named) if name == "N1" and i < canonical.dim()
                and canonical.shape[i] == self.dims.get("N1")]
        return canonical.roll([1] * len(axes), dims=axes) if self.class_token == CLASS_LAST and axes else canonical

    def recognised(self) -> tuple[tuple[str, str, str], ...]:
        """The overview's "What was recognised" rows: (what, variant, rests on)."""
        variant = ("sequence-first: (T, B, …) tensors, read as the catalogue's (B, T, …)" if self.sequence_first
                   else "batch-first: (B, T, …) tensors, as the catalogue names them")
        rows = [("Layout (every step)", variant, self.rests_on)]
        if self.folded:
            order = "head-major (h·B, …: row head·B + item)" if self.heads_major else "(B·h, …)"
            rows.append(("Heads", f"folded into the batch axis {order}, read as (B, h, …)",
                         f"the shapes of {', '.join(dict.fromkeys(self.folded))} with B and h bound by the run"
                         + (f"; {self.heads_major}" if self.heads_major else "")))
        if self.class_token:
            rows.append(("Class token", CLASS_PLACES[self.class_token], self.class_rests_on))
        elif self.late_class is not None:
            rows.append(("Class token", self.late_class.says(), self.class_rests_on))
        if self.merged_tokens is not None:
            rows.append(("Merged tokens", self.merged_tokens.says(), self.merged_tokens.rests_on()))
        if self.extra_tokens is not None:
            rows.append(("Extra tokens", self.extra_tokens.says(), self.extra_tokens.rests_on()))
        elif "N" in self.dims and self.class_token == CLASS_FIRST \
                and (extra := self.dims.get("N1", 0) - self.dims["N"] - 1) > 0:
            rows.append(("Extra tokens", f"{extra} besides the class token (distillation or register tokens): "
                         f"{self.dims['N1']} tokens = 1 + {extra} + {self.dims['N']} patches",
                         f"N1 = {self.dims['N1']} and N = {self.dims['N']}, bound from your steps' shapes"))
        rows += [(f"Keys ({t.step})", "stored transposed for the product, (B, h, hs, T): read as (B, h, T, hs)",
                  t.because) for t in self.transposed]
        return tuple(rows)

    def with_joining_row(self, step: str, named: Sequence[str], tensor: torch.Tensor) -> torch.Tensor | None:
        """A step of N1 tokens that holds the N patches alone (the class token joined after the positions were
        added), with the class token's row as it joined put in front, so the steps after it (a block's input) read
        the tokens whole; None where the run has no such step or the tensor is not (B, N, C)."""
        row = self.joining_row
        # the class token's row is a row of the stream (width C): an MLP's hidden step of width M = C has none
        if step not in self.patches_alone or row is None or "N1" not in named or tensor.dim() != 3 or named[-1] != "C":
            return None
        if (tensor.shape[0], tensor.shape[1], tensor.shape[-1]) != (row.shape[0], self.dims.get("N"), row.shape[-1]):
            return None
        return torch.cat([row.to(tensor.dtype), tensor], dim=1)

    def stored_transposed(self, step: str, named: Sequence[str], canonical: torch.Tensor) -> bool:
        """Whether the run reads this step's tensor (in the catalogue's layout by its shape) with its two last axes
        swapped: a per-head step the run found stored transposed, where the two are the same size."""
        return (canonical.dim() == 4 and canonical.shape[-1] == canonical.shape[-2]
                and any(t.step == step and t.named == tuple(named) for t in self.transposed))


def _steps(steps: Iterable[str], most: int = 6) -> str:
    """The steps named, the first ``most`` of them: "#4, #5 and 12 more"."""
    named = list(dict.fromkeys(steps))
    more = f" and {len(named) - most} more" if len(named) > most else ""
    return ", ".join(named[:most]) + more


def read_run_layout(shapes: Sequence[StepShape], legend: Legend, calls: Iterable[ModuleCall] = ()) -> RunLayout:
    """The run's layout, decided once from every captured step's shape (and, where the shapes cannot tell, the
    modules' own settings), with the reasons; see the module's docstring for the rule."""
    calls = tuple(calls)
    run = _with_extra_tokens(_with_class_token(_read_order(shapes, legend, calls), shapes, calls), shapes)
    if run.extra_tokens is None:
        # a step holding the patches alone is the class token joining after the positions, not a merge
        alone = [s for s in shapes if s.step not in run.patches_alone]
        run = replace(run, merged_tokens=find_merged_tokens(alone, run.dims, run.as_read))
    if not run.class_token and (late := find_late_class_token(shapes, run.dims, calls)) is not None:
        run = replace(run, late_class=late, class_rests_on=late.rests_on)
    steps = [(s.step, s.named, run.as_read(s)) for s in shapes if s.value is not None]
    return replace(run, transposed=stored_transposed(steps, SEQUENCE_AXES),
                   heads_major=heads_major(steps, run.dims) if run.folded else "")


def _with_extra_tokens(run: RunLayout, shapes: Sequence[StepShape]) -> RunLayout:
    """The run with its extra tokens (extra_tokens.py), where its (B, N1, C) steps show them join."""
    tokens = run.dims.get("N1")
    steps = [(s.step, run.as_read(s)) for s in shapes if s.named == ("B", "N1", "C") and s.value is not None]
    found = find_extra_tokens(steps, tokens) if tokens is not None else None
    return replace(run, extra_tokens=found) if found is not None else run


def _read_order(shapes: Sequence[StepShape], legend: Legend, calls: Iterable[ModuleCall]) -> RunLayout:
    one_head_each = one_head_of_a_batch(shapes, tuple(calls))
    batch, sequence = (_read_as(shapes, legend, first, one_head_each) for first in (False, True))
    turnable = [s for s in shapes if turned(s.named, len(s.shape), s.first_item)]
    only_sequence = [s for s in (*batch.misfits, *sequence.direct) if s not in (*sequence.misfits, *batch.direct)]
    only_batch = [s for s in (*sequence.misfits, *batch.direct) if s not in (*batch.misfits, *sequence.direct)]
    contradiction = ""
    if only_sequence and only_batch:
        contradiction = (f"The steps contradict each other: {_steps(only_sequence)} read as captured only "
                         f"sequence-first (T, B, …), {_steps(only_batch)} only batch-first (B, T, …); every step is "
                         f"read {SEQUENCE_FIRST if sequence.score < batch.score else BATCH_FIRST}, the others with "
                         "their axes permuted where their sizes allow, else not checkable on their shape.")
    if not turnable:
        return RunLayout(batch.dims, False, "no captured step has both a batch and a positions axis",
                         contradiction, batch.folded)
    if sequence.score < batch.score:
        why = (f"{_steps(only_sequence)} read as captured only sequence-first" if only_sequence else
               f"{_steps(s for s in batch.permuted if s not in sequence.permuted)} read batch-first only with their "
               "axes permuted")
        return RunLayout(sequence.dims, True, f"read jointly from every captured step: {why}", contradiction,
                         sequence.folded)
    if batch.score < sequence.score:
        why = (f"{_steps(only_batch)} read as captured only batch-first" if only_batch else
               f"{_steps(s for s in sequence.permuted if s not in batch.permuted)} read sequence-first only with "
               "their axes permuted")
        return RunLayout(batch.dims, False, f"read jointly from every captured step: {why}", contradiction,
                         batch.folded)
    says, because = batch_first_said(calls, turnable)
    if says is not None:
        chosen = sequence if says else batch
        return RunLayout(chosen.dims, says, f"the shapes read alike both ways; {because}", contradiction,
                         chosen.folded)
    return RunLayout(batch.dims, False, "the shapes read alike both ways (every batch and positions axis turned alike"
                     f"{', or B = T' if batch.dims.get('B') in [batch.dims.get(a) for a in SEQUENCE_AXES] else ''}) "
                     "and no module says: the catalogue's batch-first", contradiction, batch.folded)


def _with_class_token(run: RunLayout, shapes: Sequence[StepShape], calls: Sequence[ModuleCall]) -> RunLayout:
    """Where the class token is among a ViT's tokens (N1 = N + 1), from the values: the class token step (B, 1, C)
    found as the first or the last row of the first step of N1 tokens that holds it; else, where every step of N1
    tokens holds the patches alone (N), none. Unchanged where the run has no N1 or nothing tells."""
    tokens, patches = run.dims.get("N1"), run.dims.get("N")
    steps = [(s, run.as_read(s)) for s in shapes if "N1" in s.named and s.value is not None]
    if tokens is None or not steps:
        return run
    cls = next(((s.step, run.as_read(s)) for s in shapes if s.named == ("B", "1", "C") and s.value is not None),
               None) or class_token_read(calls, run.dims.get("C"))  # else the parameter a line read by attribute
    for step, value in steps if cls is not None and cls[1].dim() == 3 else ():
        assert cls is not None
        token = cls[1][:, 0].double()
        if value.dim() != 3 or value.shape[1] != tokens or value[:, 0].shape[1:] != token.shape[1:]:
            continue
        first, last = (torch.allclose(value[:, row].double(), token) for row in (0, -1))
        short = [s.step for s, v in steps if v.dim() == len(s.named) and v.shape[s.named.index("N1")] == patches]
        if first or last:  # (a step of N1 named with the patches alone: the positions added before it joined)
            because = (f"{step.step}'s {'first' if first else 'last'} row is {cls[0]}, the class token"
                       + (f"; it joins after the positions: {_steps(short)} hold{'s' if len(short) == 1 else ''} the "
                          f"{patches} patches alone" if short else ""))
            alone = tuple(short) if first else ()  # read with the class token's row as it joined in front
            return replace(run, class_token=CLASS_FIRST if first else CLASS_LAST, class_rests_on=because,
                           patches_alone=alone, joining_row=value[:, :1] if alone else None)
    whole = [(s, v) for s, v in steps if v.dim() == len(s.named)]
    if whole and all(v.shape[s.named.index("N1")] == patches for s, v in whole):
        return replace(run, class_token=CLASS_ABSENT, class_rests_on=(
            f"{_steps(s.step for s, _ in whole)} hold {patches} tokens, the patches alone"))
    return run


def step_shapes(pages: Sequence[Any]) -> list[StepShape]:
    """Every tensor the traced pages hold (pages.py ``_Marked``, in the catalogue's order), as evidence for the run's
    layout."""
    return [StepShape(m.label, m.shape_of(i), tuple(h.tensor.shape), i == 0 and m.snap.index == "[0]",
                      None if h.absent else h.tensor, step_roles(m, i),
                      tuple(v for v in (m.hit_values[i] if i < len(m.hit_values) else ()) if v is not None))
            for m in pages for i, h in enumerate(m.held)]


def step_roles(page: Any, k: int) -> frozenset[Role]:
    """What the catalogue declares tensor ``k`` of a traced page to be (its record's ``Ref.roles``; none for a tensor
    past its records)."""
    return page.snap.tensors[k].roles if k < len(page.snap.tensors) else frozenset()


def catalogue_layout(page: Any, k: int, tensor: torch.Tensor, run: RunLayout) -> Layout:
    """The one place a captured tensor is read in the catalogue's layout: tensor ``k`` of a traced page (the hit shown,
    or any other hit's value), against the named shape the page gives it, in the run's one layout (a snapshot showing
    the first batch item, ``[0]``, reads a batch of several as its first item: in a sequence-first run, ``x[:, 0]``)."""
    named, first_item = page.shape_of(k), k == 0 and page.snap.index == "[0]"
    roles = step_roles(page, k)
    unmerged = (run.merged_positions_first(tensor, {run.dims.get(named[1], 0)})
                if len(named) == 3 and named[0] == "B" and named[1] in SEQUENCE_AXES else None)
    if unmerged is not None:
        found = layout(unmerged, named, run.dims, {}, roles=roles)
        note = (f"positions and batch merged in one axis ({named[1]}·B, {named[2]}), a view of the sequence-first "
                f"stream; read as ({', '.join(named)})")
        return Layout(found.status, found.expected, note, found.canonical)
    turn = run.turns(named, tensor.dim(), first_item)
    read = tensor.transpose(0, 1) if turn else tensor
    if run.late_class is not None and (late := run.late_class.canonical(page.label, named, read)) is not None:
        return Layout(LayoutStatus.LAYOUT, tuple(late.shape), f"the class token {run.late_class.says()} (see the "
                      "overview)", late)
    dims = run.dims_for(named, tuple(read.shape))
    found = layout(read, named, dims, {}, first_item=first_item, roles=roles)
    axes = (("B", *named) if first_item else named)
    given = (layout(tensor, named, run.dims, {}, first_item=first_item, roles=roles)
             if turn and found.canonical is None and not tensor.is_floating_point() else None)
    if given is not None and given.canonical is not None:
        # token IDs batch-first as the script gave them, the stream sequence-first only after their lookup
        # (``embedding(ids).permute(1, 0, 2)``): read as given (``_ids_as_given``)
        return Layout(LayoutStatus.LAYOUT, given.expected, f"batch-first ({', '.join(axes)}) as given, where the "
                      "whole run is read sequence-first (see the overview)" + (f"; then {given.note}" if given.note
                                                                                else ""), given.canonical)
    notes = [f"sequence-first ({', '.join((axes[1], axes[0], *axes[2:]))}), as the whole run is read (see the "
             "overview)"] if turn else []
    if dims is not run.dims:
        when = "before the run's extra tokens joined" if run.merged_tokens is None else "left after tokens were merged"
        notes.append(f"its {dims['N1']} tokens are those {when} (see the overview)")
    canonical = found.canonical
    read = tensor.transpose(0, 1) if turn else tensor
    B, h = dims.get("B"), dims.get("h")
    if (run.heads_major and canonical is not None and B and h and "B·h" in found.note and read.dim() >= 3
            and read.shape[0] == B * h and canonical.shape[:2] == (B, h)):
        canonical = unfolded(read, B, h)
        notes.append("its heads folded head-major (h·B, …), as the whole run is read (see the overview)")
    if canonical is None and (joined := run.with_joining_row(page.label, named, read)) is not None:
        canonical = joined
        notes.append("the patches alone: the class token joins after the positions were added (see the overview), "
                     "its row as it joins put in front")
    if canonical is not None and run.stored_transposed(page.label, named, canonical):
        canonical = canonical.transpose(-2, -1)
        notes.append(f"stored transposed ({', '.join((*named[:2], named[3], named[2]))}) for the product, as the "
                     "whole run is read (see the overview)")
    if canonical is not None and (moved := run.class_first(canonical, named)) is not canonical:
        canonical = moved
        notes.append("the class token last, read first as the whole run is (see the overview)")
    if not notes:
        return found
    note = "; ".join(notes) + (f"; then {found.note}" if found.note else "")
    status = LayoutStatus.LAYOUT if canonical is not None else found.status
    return Layout(status, found.expected, note, canonical, found.unbound)
