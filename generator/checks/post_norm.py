"""A block's end, pre-norm or post-norm (the GPT catalogue's G23 and G24): a pre-norm block ends with its plain second
residual sum, the raw stream plus the MLP output; a post-norm block (``x = norm1(attended + x)``, then
``x = norm2(ff + x)``) adds the MLP output to the normalised stream and ends with a LayerNorm of that sum. Each check
passes on either form, names the one that held, and fails where neither does: a dropped residual or a LayerNorm of the
wrong tensor is neither. A post-norm step made inside one call (an ``AddAndNorm`` module of the user's) is read
with its operands from that call's arguments (``AddedThenNormed``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.base import THIS, Check, CheckResult, TraceUse, added, close
from transformer_trace.checks.dropout import DROPOUT_CLAIM, sum_through_dropout, through_dropout
from transformer_trace.checks.normalisation import fitted_layer_norm, _layer_norm
from transformer_trace.checks.values import SameTensor, SumOf
from transformer_trace.sources import MissingTensor, ModuleRef, NotCheckable, Ref, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind


def _readable(s: TensorSource, refs: tuple[Ref, ...]) -> bool:
    return bool(refs) and all(s.has(ref) for ref in refs)


@dataclass(frozen=True, kw_only=True)
class ResidualSumEitherNorm(SumOf):
    """``out`` is the sum of ``operands`` (pre-norm: the raw stream plus the sublayer output), or, post-norm, of
    ``post_norm`` (the normalised stream the previous LayerNorm handed on plus the sublayer output). The post-norm sum
    is accepted only where the block's output ``block_out`` (captured) is not this sum itself, i.e. a norm follows it:
    a pre-norm block that adds its LayerNorm's output back instead of the raw stream still fails."""
    CLAIM = "is the residual sum of the stream and the sublayer's output"

    OPTIONAL = (("post_norm", "block_out"), ("three",))  # without them: the pre-norm sum alone

    post_norm: tuple[Ref, ...] = ()
    block_out: Ref | None = None
    # the block input, the attention output (its heads merged, where no projection is captured) and the MLP output:
    # the sum read from them where the first residual sum is not captured (``SumOfThree``)
    three: tuple[Ref, ...] = ()

    def _without_absent(self, s: TensorSource) -> Check:
        if self.three and not all(s.has(ref) for ref in self.operands):
            block_in, attn_out, heads_merged, mlp_out = self.three
            attention = attn_out if s.has(attn_out) else heads_merged
            if all(s.has(ref) for ref in (block_in, attention, mlp_out)):
                return SumOfThree(out=self.out, operands=(block_in, attention, mlp_out),
                                  first_sum=s.name(self.operands[0]))
        return super()._without_absent(s)

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        """The pre-norm sum; the post-norm one where the captured block output is a LayerNorm of it (gain and bias
        fitted) and not the pre-norm sum itself."""
        pre = super().derive(s)
        if (pre is None or not self.post_norm or self.block_out is None
                or not _readable(s, (*self.post_norm, self.block_out))):
            return pre
        block_out, post = s.t(self.block_out), added(s.t(ref) for ref in self.post_norm)
        if close(block_out, pre, "")[0]:
            return pre
        try:
            _, normalised, _ = fitted_layer_norm(block_out, post, "")
        except NotCheckable:
            return pre
        return post if normalised else pre

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        claim, passed, detail = super().verify(s)
        if passed or not self.post_norm or self.block_out is None:
            return claim, passed, detail
        out = s.t(self.out)
        post, more = close(out, added(s.t(ref) for ref in self.post_norm),
                           f"{' + '.join(s.name(ref) for ref in self.post_norm)} (post-norm) vs the recorded sum")
        normed_after = not close(s.t(self.block_out), out, "")[0]
        if post and normed_after:
            return "the normalised stream and the sublayer output add up to the residual sum (post-norm)", True, more
        dropped = None if post else sum_through_dropout(out, [s.t(ref) for ref in self.post_norm])
        if dropped is not None and normed_after:  # the sublayer output through an active dropout (train mode)
            return DROPOUT_CLAIM, True, f"the normalised stream and the sublayer output (post-norm): {dropped}"
        why = more if not post else f"{more}, but the block output is this sum itself (no norm after it)"
        return claim, False, f"{detail}; nor is it the post-norm sum: {why}"


@dataclass(frozen=True, kw_only=True)
class SumOfThree(SumOf):
    """The block's last sum where no first residual sum is captured: the block input plus the attention output plus
    the MLP output, one sum (a parallel block's, ``inputs + attn + mlp`` of GPT-J and ViT-22B) or a pre-norm block's
    two at once. Judged only where it holds, or where the block input alone is missing from it (the residual dropped:
    the sublayer outputs' sum); any other value leaves it as it was, needing the first residual sum (named
    ``first_sum``)."""
    CLAIM = "is the block input plus the attention and MLP outputs"

    first_sum: str

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        out, values = s.t(self.out), [s.t(ref) for ref in self.operands]
        passed, detail = close(out, added(values), f"{' + '.join(s.name(ref) for ref in self.operands)} vs the "
                                                   "recorded sum")
        if not passed and not close(out, added(values[1:]), "")[0]:
            raise MissingTensor(self.first_sum, "not in the source")  # no form of the sum known to tell
        return ("the block input and both sublayer outputs add up to it (one sum: a parallel block, or a pre-norm "
                "block's two)", passed, detail)


@dataclass(frozen=True, kw_only=True)
class ResidualOrPostNorm(SameTensor):
    """The block output: pre-norm, the same tensor as ``source`` (the second residual sum, no norm after it); or,
    post-norm, LayerNorm ``module`` of the sum of ``operands`` (the normalised stream plus the sublayer output): with
    the LayerNorm the marked line called (its weights; trace/reading/weights.py binds a LayerNorm call whose output is
    the step), else with the gain and bias fitted. ``post_claim`` names the post-norm form where it held."""
    CLAIM = "is the block's last residual sum, or a LayerNorm of it (post-norm)"

    WEIGHTS_OPTIONAL = True
    # the Linear or module of the user's the line called: the sublayer output where the sum is not captured
    # (trace/reading/sublayer_then_normed.py)
    TRACE = TraceUse(calls={"module": (ModuleKind.LAYER_NORM, "module"),
                            "operands": (ModuleKind.LAYER_NORM, "input")},
                     also_calls=frozenset({ModuleKind.LINEAR, ModuleKind.USER}))
    OPTIONAL = (("operands",),)  # without them: the pre-norm form alone
    LEFT_OUT = "residual dropped"

    operands: tuple[Ref, ...] = ()
    module: ModuleRef | None = None
    post_claim: str = "is LayerNorm(input + sublayer output): a post-norm block ends with a norm"

    def reading(self, name: str, ref: Ref) -> Check:
        """The post-norm form read from the LayerNorm call's own input (the sum, where its operands are not all
        captured)."""
        return dataclasses.replace(self, operands=(ref,)) if name == "operands" else super().reading(name, ref)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        claim, passed, detail = super().verify(s)
        if passed or not self.operands or self.module is None:
            return claim, passed, detail
        total: torch.Tensor = added(s.t(ref) for ref in self.operands)
        try:
            _, post, more = _layer_norm(s, self.out, total, self.module, "input + sublayer output")
        except (NotCheckable, AttributeError, KeyError):  # too few rows to fit a LayerNorm; no such module
            return claim, passed, detail
        if post:
            return self.post_claim, True, more
        if s.has(self.source):  # the LayerNorm of the second residual sum as captured: that sum's own check judges it
            _, normed, of_sum = _layer_norm(s, self.out, s.t(self.source), self.module, s.name(self.source))
            if normed:
                return (f"is LayerNorm({s.name(self.source)}): a post-norm block ends with a norm of its second "
                        "residual sum"), True, of_sum
        return claim, False, f"{detail}; nor is it the post-norm form: {more}"


@dataclass(frozen=True, kw_only=True)
class AddedThenNormed(Check):
    """A post-norm residual step one LayerNorm call of the marked line made of the tensors the line added, its sublayer
    output shown by no snapshot: the arguments of a module of the user's (``AddAndNorm(x, sublayer_out)``, whose
    forward is ``norm(x + dropout(sublayer_out))``) or the tensors the line read (``norm(attention + query)``).
    ``step``, the residual check, runs with ``operands`` read the catalogue's way: the stream, a captured step, and the
    sublayer output, the one other tensor added (trace/reading/added_then_normed.py tells them apart), so a stream
    dropped or zeroed among the arguments is named "residual dropped" at its own step. Where that sum does not give
    the step and no bug form fits (something ran between the addition and the norm: a dropout in training mode), the
    step is read as before, the LayerNorm of the norm's own input ``normed``, and says why."""

    SUBSTITUTES = False  # the step's own check tries its substitutes when it runs

    out: Ref = THIS
    operands: tuple[Ref, ...]
    normed: Ref
    step: Any = None  # the residual check (a ResidualLayerNorm), a value: its fields are read through it

    def run(self, s: TensorSource) -> CheckResult:
        result = dataclasses.replace(self.step, operands=self.operands).run(s)
        if result.passed or result.evidence is not None or not result.checkable:
            return result
        own = self.step.reading("operands", self.normed).run(s)
        if not own.passed:
            return result
        stream = added(s.t(ref) for ref in self.operands[:-1])
        dropped = through_dropout(s.t(self.normed) - stream, s.t(self.operands[-1]),
                                  "the norm's input less the stream vs the sublayer output")
        why = (f"the stream and the sublayer output add up to the norm's input through an active dropout ({dropped})"
               if dropped is not None else f"what the line added does not give the step as the stream + the "
               f"sublayer output ({result.detail}), so it is read from the norm's own input")
        return dataclasses.replace(own, detail=f"{own.detail}; {why}")

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        result = self.run(s)
        if not result.checkable:
            raise NotCheckable(result.missing[0] if result.missing else s.name(self.out), result.detail)
        return result.name, result.passed, result.detail
