"""A sublayer given the residual stream itself where a pre-norm block gives it a LayerNorm of the stream (issue 40:
``x = x + self.mha(x)`` with the attention's ``norm1`` left out; an MLP module that normalises its input and then
calls its Linears with the input itself). No step's own check sees it: the sublayer's output is whatever its Linears
made of what they were given, and the residual sum adds up. The marked lines' module calls show it:

- a *stream* is a captured step that a marked line added a sublayer's output to (its step equals the stream plus the
  output of a call the line made, or plus that output × a gain per channel, LayerScale), never a LayerNorm's output;
- the block is *pre-norm* where a marked line of the same stage applied a LayerNorm to a stream, its output not the
  line's step (a post-norm block normalises sums that are its steps, and its sublayers read those LayerNorms'
  outputs, never a stream a LayerNorm also reads); or where a marked line's projection was given a LayerNorm of a
  stream, fitted, not the stream itself (a post-norm block's streams are already normalised: a LayerNorm of one is
  itself; JoeyNMT's pre-norm decoder, whose LayerNorms run on unmarked lines; a Linear shared by the heads, called on
  the stream split into them, read on the merged heads: shared_heads.py);
- a Linear (or an attention module, or a projection of the user's own class: a mixture of experts' router and experts)
  a marked line of that stage ran was called with a stream itself (or with its batch and positions merged, (B·T, C)),
  and that input is no LayerNorm of the stream (a LayerNorm with a gain and bias fitted per feature does not reproduce
  it: a stream already normalised cannot tell).

Then the first such line (in the catalogue's order) fails with the bug form "sublayer given the stream, not its
LayerNorm". Correct pre-norm code gives every sublayer's first Linear a LayerNorm's output, and post-norm code has no
LayerNorm of a stream, so it never fires there."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import FAILED, CheckResult, UnfittableWeights, close
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.checks.normalisation import fitted_layer_norm
from transformer_trace.checks.residual_forms import layer_scaled_sum
from transformer_trace.trace.child.protocol import FED_AT, NORMS_INSIDE, ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import looks_like
from transformer_trace.trace.reading.same_tensors import same_floats
from transformer_trace.trace.reading.shared_heads import heads_merged

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

STREAM_NOT_NORMALISED = "sublayer given the stream, not its LayerNorm"
CLAIM = "each sublayer is given a LayerNorm of the stream it is added to (pre-norm)"
PROJECTIONS = (ModuleKind.LINEAR, ModuleKind.MULTIHEAD_ATTENTION)


def _input(page: SnapshotReading, call: ModuleCall) -> torch.Tensor | None:
    """The call's first input, read as the page's step is (sequence-first code's turned batch-first)."""
    first = call.inputs[0] if call.inputs else None
    return page.run.as_called(first) if isinstance(first, torch.Tensor) else None


def _output(page: SnapshotReading, call: ModuleCall) -> torch.Tensor | None:
    first = call.outputs[0] if call.outputs else None
    return page.run.as_called(first) if isinstance(first, torch.Tensor) else None


def _projects(call: ModuleCall) -> bool:
    """A Linear or an attention module, or a module of the user's that is a projection by its output (a Linear class
    of its own: a mixture of experts' router and experts, DeepSeek-V3's)."""
    return call.kind in PROJECTIONS or call.kind == ModuleKind.USER and looks_like(ModuleKind.LINEAR, call)


def _sublayer_module(page: SnapshotReading, call: ModuleCall, stream: SnapshotReading) -> bool:
    """A module of the user's, no norm inside it, called by the line or by an unmarked statement whose output it read
    (round twenty-three's luulecmg: ``out = self.mlp(self.norm2(x))``, then ``x = x + out  # BREAKPOINT S19``, the
    MLP an ``nn.Sequential`` in a class of the user's), whose output the step adds to the stream: the sublayer
    itself, its input the one its first Linear was given (a module that normalises inside, ``nn.Sequential(
    nn.LayerNorm(d), ...)``, is given the stream by correct code: not this)."""
    output = _output(page, call)
    return (call.kind == ModuleKind.USER and call.depth == 1 and call.attrs.get(NORMS_INSIDE) == 0
            and output is not None and output.shape == stream.main_as_called.shape
            and _added(page.main_as_called, stream.main_as_called, output))


def _unmerged(given: torch.Tensor | None, stream: torch.Tensor) -> torch.Tensor | None:
    """A call's input with the stream's batch and positions merged in one axis, (B·T, C) — a feed-forward or a mixture
    of experts run on `x.view(-1, C)` — read in the stream's shape; any other as it is."""
    if (given is not None and given.dim() == 2 and stream.dim() == 3 and given.shape != stream.shape
            and given.shape[0] == stream.shape[0] * stream.shape[1] and given.shape[1] == stream.shape[2]):
        return given.reshape(stream.shape)
    return given


def _is_norm(call: ModuleCall) -> bool:
    """A LayerNorm, or a module of the user's that looks like one (a gain and a bias of one axis each)."""
    params = [p for p in call.params.values() if isinstance(p, torch.Tensor)]
    return call.kind == ModuleKind.LAYER_NORM or (call.kind == ModuleKind.USER and 0 < len(params) <= 2
                                                  and all(p.dim() == 1 for p in params))


def _added(step: torch.Tensor, stream: torch.Tensor, output: torch.Tensor) -> bool:
    """Whether ``step`` is ``stream`` plus the sublayer ``output``, as it is or scaled by a learned gain per channel
    (LayerScale, ``x + gamma * mlp(norm2(x))``: checks/residual_forms.py)."""
    if same_floats(step, stream + output):
        return True
    fit = layer_scaled_sum(step.double(), stream.double(), [output.double()]) if step.shape == stream.shape else None
    return fit is not None and fit.holds


def captured_by_stage(readings: Sequence[SnapshotReading]) -> list[list[SnapshotReading]]:
    """The captured steps of floating-point values, stage by stage (a stream is added to within its stage)."""
    stages: dict[str, list[SnapshotReading]] = {}
    for page in readings:
        shown = page.main.shown.tensor if page.captured else None
        if isinstance(shown, torch.Tensor) and shown.is_floating_point():
            stages.setdefault(page.snap.stage, []).append(page)
    return list(stages.values())


def _streams(pages: Sequence[SnapshotReading]) -> list[SnapshotReading]:
    """The captured steps of ``pages`` a marked line added a sublayer's output to (the module docstring): of the two
    operands of ``x = x + a`` the line read (or two captured steps it adds up), the stream is the one that ran first
    (the sublayer was computed from it)."""
    found: dict[int, SnapshotReading] = {}
    for page in pages:
        step = page.main_as_called
        alike = [other for other in pages if other is not page and other.main_as_called.shape == step.shape]
        outputs = [out for call in page.calls if not _is_norm(call)
                   and (out := _output(page, call)) is not None and out.shape == step.shape]
        for out in outputs:
            later = [other.order for other in alike if same_floats(out, other.main_as_called)]
            found.update({other.snap.number: other for other in alike if all(other.order < order for order in later)
                          and _added(step, other.main_as_called, out)})
        found.update({stream.snap.number: stream for stream, sublayer in itertools.permutations(alike, 2)
                      if stream.order < sublayer.order  # both operands captured
                      and same_floats(step, stream.main_as_called + sublayer.main_as_called)})
        found.update({first.snap.number: first for first, *sublayers in itertools.combinations(
                      sorted(alike, key=lambda p: p.order), 3)  # a parallel block's one sum: input + both sublayers
                      if same_floats(step, first.main_as_called + sum(p.main_as_called for p in sublayers))})
    norm_outputs = [out for page in pages for call in page.calls
                    if _is_norm(call) and (out := _output(page, call)) is not None]
    return [page for page in found.values() if not any(same_floats(page.main_as_called, out) for out in norm_outputs)]


def _pre_norm(pages: Sequence[SnapshotReading],
              streams: Sequence[SnapshotReading]) -> tuple[SnapshotReading, SnapshotReading] | None:
    """A LayerNorm a marked line applied to a stream whose output is no stream (a sublayer's input, not the stream
    carried on: a post-norm block's LayerNorms read sums nothing is added to before they are normalised), or else a
    projection a marked line gave a LayerNorm of a stream (``_given_a_norm``), as (the line's page, the stream); None
    where none did."""
    return next(((page, stream) for page in pages for call in page.calls if _is_norm(call)
                 and not any(same_floats(_output(page, call), other.main_as_called) for other in streams)
                 for stream in streams if same_floats(_input(page, call), stream.main_as_called)),
                None) or _given_a_norm(pages, streams)


def _final_norm(readings: Sequence[SnapshotReading], pages: Sequence[SnapshotReading],
                streams: Sequence[SnapshotReading]) -> tuple[SnapshotReading, SnapshotReading] | None:
    """A LayerNorm a marked line of a later stage applied to a tensor of the streams' shape (the final LayerNorm after
    the blocks, which a pre-norm model has and a post-norm one, whose blocks' outputs are already normalised, has no
    need of), where this stage's streams are plain sums, no LayerNorm's output, and no marked line of the stage
    called a LayerNorm on a tensor of their shape (a post-norm block's lines normalise its sums; a norm of the queries
    per head is no such): as (that line's page, the stream); None where no later line did."""
    shape = streams[0].main_as_called.shape
    if any(_is_norm(call) and (given := _input(page, call)) is not None and given.shape == shape
           for page in pages for call in page.calls):
        return None
    last = max(p.snap.number for p in pages)
    later = [p for p in readings if p.captured and p.snap.number > last]
    return next(((page, stream) for page in later for call in page.calls if call.kind == ModuleKind.LAYER_NORM
                 and (given := _input(page, call)) is not None for stream in streams[:1]
                 if given.shape == stream.main_as_called.shape), None)


def _given_a_norm(pages: Sequence[SnapshotReading],
                  streams: Sequence[SnapshotReading]) -> tuple[SnapshotReading, SnapshotReading] | None:
    """The first projection a marked line called (in the catalogue's order) with a LayerNorm of a stream, gain and bias
    fitted per feature, and not the stream itself (a LayerNorm of an already normalised stream is that stream: a
    post-norm block's), as (the line's page, the stream); None where none was."""
    for page in sorted(pages, key=lambda p: p.snap.number):
        for call in map(heads_merged, page.calls):  # (a Linear shared by the heads: on the merged heads)
            given = _input(page, call) if _projects(call) else None
            if given is None:
                continue
            for stream in streams:
                if given.shape != stream.main_as_called.shape or same_floats(given, stream.main_as_called):
                    continue
                try:
                    if fitted_layer_norm(given.double(), stream.main_as_called.double(), stream.label)[1]:
                        return page, stream
                except UnfittableWeights:
                    continue
    return None


def _made_from(output: torch.Tensor, pages: Sequence[SnapshotReading]) -> SnapshotReading | None:
    """The first captured step (in the catalogue's order) holding the values of a Linear's output, rearranged (heads
    split from it), or one third of them along its last axis (one of q, k and v of a fused projection)."""
    parts = [output, *(output.chunk(3, dim=-1) if output.shape[-1] % 3 == 0 else ())]
    for page in sorted(pages, key=lambda p: p.snap.number):
        step = page.main_as_called.double().flatten().sort().values
        if any(part.numel() == step.numel() and close(part.double().flatten().sort().values, step, "")[0]
               for part in parts):
            return page
    return None


def _not_normalised(given: torch.Tensor, stream: SnapshotReading) -> str | None:
    """Why ``given`` is no LayerNorm of the stream (the fit's detail, with its rows' means and spreads); None where a
    LayerNorm of it fits, or too few positions tell."""
    try:
        _, fits, detail = fitted_layer_norm(given.double(), stream.main_as_called.double(), stream.label)
    except UnfittableWeights:
        return None
    if fits:
        return None
    rows = given.double().reshape(-1, given.shape[-1])
    mean, spread = rows.mean(-1), rows.std(-1, unbiased=False)
    return (f"per position its values have mean {float(mean.min()):.3g} to {float(mean.max()):.3g} and standard "
            f"deviation {float(spread.min()):.3g} to {float(spread.max()):.3g}, where a LayerNorm's have mean 0 and "
            f"deviation 1 before its gain and bias; {detail}")


def _named(page: SnapshotReading) -> str:
    return f"{page.main.variable or page.main.name} ({page.label})"


def _message(page: SnapshotReading, call: ModuleCall, stream: SnapshotReading,
             normalised: tuple[SnapshotReading, SnapshotReading], why: str) -> str:
    """The diagnosis in the student's names: the sublayer (the module of theirs that ran the Linear), the stream, and
    the LayerNorm of a stream that shows the block is pre-norm."""
    index = next(i for i, made in enumerate(page.calls) if made is call)
    later = page.calls[index + 1:]  # calls are listed as they return: the caller after its callees
    caller = next((c for c in later if c.depth < call.depth and c.kind == ModuleKind.USER), None)
    who = (f"your {caller.module}'s {call.module}" if caller is not None else
           f"the {call.module} an unmarked statement {page.label}'s line read called" if call.attrs.get(FED_AT)
           is not None else f"the {call.module} {page.label}'s line called")
    line, normed = normalised
    evidence = (f"this model normalises once more after its blocks (what {line.label}'s line ran) while its blocks' "
                f"sums are left as they are, as a pre-norm model does" if line.snap.stage != page.snap.stage else
                f"this block normalises its stream before a sublayer (what {line.label}'s line ran normalised "
                f"{_named(normed)}, or was given a LayerNorm of it), but not here")
    return (f"{who} was given {_named(stream)} itself (equal within the tolerance), where a LayerNorm of it belongs: "
            f"{evidence}; {why}")


def stream_not_normalised(readings: Sequence[SnapshotReading],
                          results: dict[int, list[CheckResult]]) -> dict[int, list[CheckResult]]:
    """``results`` with the first captured step (in the catalogue's order) whose line called a Linear with a stream of
    a pre-norm block itself failing with the bug form STREAM_NOT_NORMALISED (the module docstring); the others as they
    were."""
    for pages in captured_by_stage(readings):
        streams = _streams(pages)
        normalised = (_pre_norm(pages, streams) or _final_norm(readings, pages, streams)) if streams else None
        if normalised is None:
            continue
        for page, call, stream, why in _misfed(pages, streams):
            output = _output(page, call)
            named = _made_from(output, pages) if output is not None else None
            at = named if named is not None and named.snap.number < page.snap.number else page
            message = _message(page, call, stream, normalised, why)
            if at is not page:
                message = f"{message}; your {_named(at)} holds that {call.module}'s output, rearranged"
            found = CheckResult(name=CLAIM, passed=False, status=FAILED, detail=message,
                                evidence=Evidence(BUG_FORM, STREAM_NOT_NORMALISED, message))
            return {**results, at.snap.number: [*results.get(at.snap.number, []), found]}
    return results


def _misfed(pages: Sequence[SnapshotReading], streams: Sequence[SnapshotReading],
            ) -> Iterator[tuple[SnapshotReading, ModuleCall, SnapshotReading, str]]:
    """Each Linear (or attention module) a marked line called with a stream itself, no LayerNorm of it, in the
    catalogue's order: (the line's page, the call, the stream, why its input is no LayerNorm of the stream)."""
    for page in sorted(pages, key=lambda p: p.snap.number):
        for call in page.calls:
            given = _input(page, call)
            stream = next((s for s in streams
                           if same_floats(_unmerged(given, s.main_as_called), s.main_as_called)), None)
            read = _unmerged(given, stream.main_as_called) if stream is not None else None
            if read is not None and stream is not None and (_projects(call) or _sublayer_module(page, call, stream)):
                why = _not_normalised(read, stream)
                if why is not None:
                    yield page, call, stream, why
