"""Checks of values handed on: embedding lookups, a tensor equal to an earlier one (or its LayerNorm), linear layers,
residual sums, the class token's row (or the mean, for mean pooling), learned parameters, probabilities, GELU,
blocks."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from transformer_trace.checks.base import (GELU_MINIMUM, THIS, BoundT, CallBinder, Check, CheckResult, TraceUse,
                                          UnfittableWeights, added, close, linear, tolerance)
from transformer_trace.checks.activated_sum import ACTIVATED_SUBLAYER
from transformer_trace.checks.dropout import DROPOUT_CLAIM, sum_through_dropout
from transformer_trace.checks.evidence import BugForm, Fit, Property
from transformer_trace.checks.merged_sum import MERGED_CLAIM, MERGED_FORMS, merged_stream_left, merged_stream_sum
from transformer_trace.checks.residual_forms import scaled_residual, stream_left_out
from transformer_trace.checks.sandwich_norm import sandwich_sum
from transformer_trace.checks.normalisation import NORMALISED_RESIDUAL, NORMALISED_STREAM, fitted_layer_norm
from transformer_trace.checks.post_norm_sum import NORMALISED_STREAM_LEFT_OUT, normalised_sum
from transformer_trace.checks.projected_alike import equal_to_earlier_part, projected_as_another
from transformer_trace.checks.conditional_positions import conditional_encoding, transposed_encoding
from transformer_trace.checks.sinusoids import added_twice_without_table, same_for_every_item
from transformer_trace.checks.position_rows import FIRST_ROW_EVERYWHERE, TESTED, first_row_of_parameter
from transformer_trace.indexing import parse_index
from transformer_trace.sources import ModuleRef, NotCheckable, ParamRef, Ref, TensorSource
from transformer_trace.checks.decoded_rows import new_rows_first
from transformer_trace.trace.reading.extra_tokens import rows_joined
from transformer_trace.tensors import fmt
from transformer_trace.trace.child.protocol import ModuleKind


@dataclass(frozen=True, kw_only=True)
class EmbeddingLookup(Check):
    """Tensors only: each position is its ID's row of the captured ``table``; with ``sqrt_scaled`` the rows may also
    be multiplied by √C, as the paper does. A ``table`` holding only a leading corner of the table (what a debugger
    shows of a big one) is compared where it reaches: the positions whose ID is one of its rows, over its columns."""
    CLAIM = "each position is its ID's row of the embedding table"

    TRACE = TraceUse(calls={"ids": (ModuleKind.EMBEDDING, "input"), "table": (ModuleKind.EMBEDDING, "weight")})

    out: Ref = THIS
    ids: Ref
    table: Ref
    sqrt_scaled: bool = False

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        claim = "lookup returns the table rows of the IDs" + (" (times √C or not)" if self.sqrt_scaled else "")
        emb, table, index = s.t(self.out), s.t(self.table), s.t(self.ids).long().reshape(-1)
        R, K = table.shape
        C = emb.shape[-1]
        rows = emb.reshape(-1, C)  # (B, L, C) -> (B·L, C): one row per position
        if rows.shape[0] != index.numel():
            return claim, False, f"{index.numel()} IDs for {rows.shape[0]} positions"
        covered = index < R
        if not bool(covered.any()):
            raise NotCheckable(s.name(self.table), f"it holds rows 0…{R - 1} only, and no ID is among them")
        part = "" if bool(covered.all()) and K == C else (
            f" ({int(covered.sum())} of {index.numel()} positions have an ID among the {R} rows held, compared over "
            f"{K} of {C} features)")
        got, want = rows[covered, :K], table[index[covered]]
        for scale, name in ((1.0, ""), (math.sqrt(C), f" × √{C}"))[: 2 if self.sqrt_scaled else 1]:
            passed, detail = close(got, want * scale, f"each position vs its ID's table row{name}{part}")
            if passed:
                break
        return claim, passed, detail


@dataclass(frozen=True, kw_only=True)
class SameTensor(Check):
    """``out`` equals ``source`` (e.g. a layer's input is what the previous stage handed over). ``or_layer_norm``: or is
    a LayerNorm of it (gain and bias fitted): a model may normalise the embeddings before layer 1, or end a pre-norm
    stack with a final LayerNorm, and say so. ``or_pre_norm_input``: the same fit, where ``source`` is a residual sum
    that post-norm code normalises and pre-norm code (``ffn(norm(x))``) normalises only on the way into the sublayer;
    what is handed over is still derived from ``source`` where ``out`` was not captured (post-norm, the catalogue's);
    so is it with ``or_layer_norm`` where ``derive_plain`` (CLIP's ``ln_pre``: the LayerNorm is the exception)."""

    DERIVES = "out"

    out: Ref = THIS
    source: Ref
    claim: str
    or_layer_norm: bool = False
    or_pre_norm_input: bool = False
    derive_plain: bool = False
    newest_last: bool = False  # a decoder's output: rows it holds besides ``source`` are earlier positions' (a cache)

    BUG_FORMS: ClassVar[tuple[BugForm, ...]] = (BugForm("new rows before the cache", "the output vs the new rows "
                                                        "first, the cached rows after them", new_rows_first),)

    def claim_in_words(self) -> str:
        return self.claim

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        """What was handed over, where nothing may come between (no LayerNorm variant allowed, or ``derive_plain``)."""
        return None if self.or_layer_norm and not self.derive_plain else s.t(self.source)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        passed, detail = close(s.t(self.out), s.t(self.source), f"{s.name(self.out)} vs {s.name(self.source)}")
        if not passed and (start := rows_joined(s.t(self.out), s.t(self.source))) is not None:
            extra = s.t(self.out).shape[1] - s.t(self.source).shape[1]
            rows = f"rows {start}…{start + extra - 1}"
            if self.newest_last:  # a decoder's: the earlier positions' cached rows, the new one(s) last
                return (f"{self.claim}, after {extra} cached rows of the earlier positions (one new row decoded per "
                        "call)", start == 0, f"{s.name(self.out)} without {rows} equals {s.name(self.source)} "
                        f"(largest difference within 1e-04){'' if start == 0 else ': the new rows are not last'}")
            return (f"{self.claim}, with {extra} extra tokens of the model's own (registers) joined at {rows}", True,
                    f"{s.name(self.out)} without {rows} equals {s.name(self.source)} (largest difference within 1e-04)")
        if not passed and (self.or_layer_norm or self.or_pre_norm_input):
            try:
                _, normalised, fitted = fitted_layer_norm(s.t(self.out), s.t(self.source), s.name(self.source))
            except UnfittableWeights:
                normalised = False
            if normalised and self.or_pre_norm_input:
                return (f"is a LayerNorm of {s.name(self.source)}: a pre-norm layer (the sublayer reads norm(x), the "
                        "residual stream stays un-normalised)"), True, fitted
            if normalised:
                return self.claim + ", normalised", True, f"a LayerNorm between the two recognised: {fitted}"
        return self.claim, passed, detail


@dataclass(frozen=True, kw_only=True)
class LinearOf(Check):
    """``out`` is ``module`` (a Linear) applied to ``x``, after an optional ReLU; ``index`` compares a slice."""
    CLAIM = "is a Linear layer applied to its input"

    # the tensors the line read: a patch convolution's output the line moves into (B, N, C), where the convolution ran
    # on an earlier, unmarked line (trace/reading/patch_grid.py)
    TRACE = TraceUse(calls={"module": (ModuleKind.LINEAR, "module"), "x": (ModuleKind.LINEAR, "input")},
                     reads_locals=True)

    # K or V projected by an earlier one's Linear (checks/projected_alike.py): two projections never agree
    BUG_FORMS: ClassVar[tuple[BugForm, ...]] = (BugForm("computed from another tensor", "the step vs an earlier of q, "
                                                        "k and v, value for value", projected_as_another),)

    out: Ref = THIS
    x: Ref
    module: ModuleRef
    activation: str | None = None
    index: str | None = None

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        inp = s.t(self.x)
        if self.activation == "relu":
            inp = F.relu(inp)
        expected, actual = linear(s, self.module, inp), s.t(self.out)
        if actual.shape != expected.shape and actual.numel() == expected.numel() \
                and actual.shape[:2] == expected.shape[:2]:  # (B, L, h, hs) and (B, L, C): the heads' own axis or not
            actual = actual.reshape(expected.shape)
        parts = expected.shape[-1] // max(actual.shape[-1], 1) if actual.dim() == expected.dim() else 1
        if parts in (2, 3) and expected.shape[:-1] == actual.shape[:-1] \
                and expected.shape[-1] == parts * actual.shape[-1]:
            # a fused projection (k and v, or q, k and v, in one Linear) split on the line: the part nearest the step
            expected = min(expected.chunk(parts, dim=-1), key=lambda part: float((part - actual).abs().max()))
        if self.index:
            expected, actual = expected[parse_index(self.index)], actual[parse_index(self.index)]
        name = s.name(self.module)
        passed, detail = close(actual, expected, f"recomputed x·Wᵀ + b with {name}'s weights")
        if passed and (same := equal_to_earlier_part(self, s)) is not None:  # the Linear it called is another's
            passed, detail = False, f"{detail}; but it equals {same[0]} value for value ({same[1]})"
        if not passed and bool((actual >= 0).all()) and close(actual, F.relu(expected), "")[0]:
            _, detail = close(actual, F.relu(expected), f"recomputed ReLU(x·Wᵀ + b) with {name}'s weights")
            return f"equals {name} applied to its input, through a ReLU on the same line", True, detail
        return f"equals {name} applied to its input", passed, detail


def _operand_twice(check: Any, s: TensorSource) -> Fit | None:
    """The sum with one operand added twice (positions added twice: ``x = x + pos`` once more)."""
    if len(check.operands) < 2:
        return None
    out, total = s.t(check.out), sum(s.t(ref) for ref in check.operands)
    for ref in check.operands:
        fits, detail = close(out, total + s.t(ref), f"vs the sum with {s.name(ref)} added twice")
        if fits:
            return Fit(True, f"{s.name(ref)} was added twice: your {s.name(check.out)} is the sum with "
                             f"{s.name(ref)} counted twice ({detail})")
    return Fit(False, "no operand added twice fits")


@dataclass(frozen=True, kw_only=True)
class SumOf(Check):
    """A residual sum: ``out`` is the sum of ``operands`` (tensors only)."""
    CLAIM = "is the sum of its operands (a residual sum)"

    # an unmarked sublayer output, from the module the line called last
    # (or the table the line read by attribute: positions from a buffer, trace/reading/residuals.py)
    TRACE = TraceUse(also_calls=frozenset({ModuleKind.LINEAR, ModuleKind.USER, ModuleKind.MULTIHEAD_ATTENTION,
                                           ModuleKind.READ, ModuleKind.EMBEDDING}))  # (every operand: summed_calls)
    BUG_FORMS: ClassVar[tuple[BugForm, ...]] = (BugForm("added twice", "the sum with one operand counted twice",
                                                        _operand_twice), NORMALISED_RESIDUAL, NORMALISED_STREAM,
                                                stream_left_out("residual dropped"), NORMALISED_STREAM_LEFT_OUT,
                                                ACTIVATED_SUBLAYER, *MERGED_FORMS)
    LEFT_OUT = "residual dropped"

    DERIVES = "out"

    out: Ref = THIS
    operands: tuple[Ref, ...]

    def bound_by(self, calls: CallBinder[BoundT]) -> BoundT | None:
        """Bound to the sublayer output the traced line's last module call gives, where no snapshot shows it."""
        return calls.operand(self)

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        return added(s.t(ref) for ref in self.operands)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        if (merged := merged_stream_sum(s, self.out, self.operands)) is not None:
            return merged  # tokens merged between the block's two sums (ToMe): the operands' shapes differ
        if len({tuple(s.t(ref).shape) for ref in (self.out, *self.operands)}) > 1 and merged_stream_left(self, s):
            return MERGED_CLAIM, False, "the operands hold other token counts than the step: no merge of them makes it"
        expected = added(s.t(ref) for ref in self.operands)
        passed, detail = close(s.t(self.out), expected, "operands added up vs the recorded sum")
        if not passed and (dropped := sum_through_dropout(s.t(self.out), [s.t(ref) for ref in self.operands])):
            return DROPOUT_CLAIM, True, str(dropped)  # training mode: the dropout's mask read back
        if not passed and (scaled := scaled_residual(s, self.out, self.operands)) is not None:
            return scaled
        if not passed and (normed := normalised_sum(s, self.out, self.operands)) is not None:
            return normed  # post-norm, the marker on the line that normalises the sum
        if not passed and (sandwich := sandwich_sum(s, self.out, self.operands)) is not None:
            return sandwich  # the sublayer output normalised before the sum (Gemma 2)
        return "the operands add up to the residual sum", passed, detail


@dataclass(frozen=True, kw_only=True)
class TokensConcat(Check):
    """Tensors only: row 0 of ``out`` is the class token ``cls``, the rest the ``patches``; where no snapshot shows
    the class token, the parameter the marked line read (``self.class_token``), one for every item."""
    CLAIM = "row 0 is the class token, the rest the patch embeddings"

    TRACE = TraceUse(calls={"cls": (ModuleKind.READ, "weight")})

    OPTIONAL = (("positioned",),)

    out: Ref = THIS
    cls: Ref
    patches: Ref
    # the tokens with their positions (the next step), for a class token joined after the positions were added to the
    # patches: the run reads that step with the class token's row as it joined in front (trace/reading/run_layout.py)
    positioned: Ref | None = None

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        claim, passed, detail = self._concatenated(s)
        if passed or self.positioned is None or not s.has(self.positioned):
            return claim, passed, detail
        out, positioned = s.t(self.out), s.t(self.positioned)
        if out.shape != positioned.shape or not close(out[:, :1], self._class_rows(s), "")[0]:
            return claim, passed, detail
        after, more = close(out[:, 1:], positioned[:, 1:], f"row 0 vs the class token; rows 1… vs the patches with "
                            f"their positions ({s.name(self.positioned)})")
        if not after:
            return claim, passed, f"{detail}; nor the patches with their positions: {more}"
        return ("row 0 is the class token, the rest are the patch embeddings with their positions (added before the "
                "class token joined)"), True, more

    def _class_rows(self, s: TensorSource) -> torch.Tensor:
        cls, patches = s.t(self.cls), s.t(self.patches)
        if patches.dim() == 3 and cls.numel() == cls.shape[-1] == patches.shape[-1]:
            return cls.reshape(1, 1, -1).expand(patches.shape[0], 1, -1)
        return cls

    def _concatenated(self, s: TensorSource) -> tuple[str, bool, str]:
        cls, patches, out = s.t(self.cls), s.t(self.patches), s.t(self.out)
        if patches.dim() == 3 and cls.numel() == cls.shape[-1] == patches.shape[-1]:  # the parameter itself, one
            cls = cls.reshape(1, 1, -1).expand(patches.shape[0], 1, -1)  # token, (1, 1, D) or (1, D): every item's
        expected = torch.cat([cls, patches], dim=1)
        passed, detail = close(out, expected, "row 0 vs the class token, rows 1… vs the patch embeddings")
        if not passed and out.shape == expected.shape and out.shape[0] > 1 and close(out[:, :1], cls, "")[0]:
            # positions added to the patches before the class token joined: rows 1… are the patches plus a term
            # that depends on the position only
            term = out[:, 1:] - patches
            later, more = close(term, term[:1].expand_as(term), "row 0 vs the class token; rows 1… minus the patch "
                                f"embeddings, each of the {term.shape[0]} items vs the first item's")
            if later:
                return ("row 0 is the class token, the rest are the patch embeddings with their positions (added "
                        "before the class token joined)"), True, more
        extra = _extra_tokens(out, cls, patches) if not passed else None
        return extra or ("row 0 is the class token, the rest are the patch embeddings", passed, detail)


def _extra_tokens(out: torch.Tensor, cls: torch.Tensor, patches: torch.Tensor) -> tuple[str, bool, str] | None:
    """Tokens besides the class token (DeiT's distillation token, register tokens): ``out`` holds 1 + e + N rows, row 0
    the class token, the N patch embeddings right after the e extra tokens or after them at the end, and each extra
    token the same for every item (a learned token); None where ``out`` holds no more rows than 1 + N, or that fails."""
    extra = out.shape[1] - 1 - patches.shape[1] if out.dim() == patches.dim() == 3 else 0
    if extra <= 0 or out.shape[0] < 2 or out[:, :1].shape != cls.shape:
        return None
    for where, first in (("after them", 1 + extra), ("before them, at the end", 1)):
        rows = out[:, first:first + patches.shape[1]]
        learned = torch.cat([out[:, 1:first], out[:, first + patches.shape[1]:]], dim=1)
        if close(out[:, :1], cls, "")[0] and close(rows, patches, "")[0] and close(
                learned, learned[:1].expand_as(learned), "")[0]:
            _, detail = close(rows, patches, f"row 0 vs the class token; rows {first}… vs the patch embeddings; the "
                              f"{extra} extra rows the same for every item")
            return (f"row 0 is the class token, then {extra} extra learned token{'s' if extra > 1 else ''} "
                    f"(distillation or register) and the patch embeddings {where}"), True, detail
    return None


def whole_ids(ids: torch.Tensor) -> tuple[str, bool, str]:
    """What tensors alone say of token IDs (without the run's vocabulary): whole numbers, none negative."""
    fractional, negative = int((ids != ids.round()).sum()), int((ids < 0).sum())
    return "token IDs are whole numbers ≥ 0", fractional == negative == 0, (
        f"{ids.numel()} IDs, from {_number(ids.min())} to {_number(ids.max())}: {fractional} not whole, "
        f"{negative} negative")


def _number(value: torch.Tensor) -> str:
    """A whole number as the integer it is (an ID), anything else to 4 decimals."""
    number = float(value)
    return str(int(number)) if number.is_integer() else fmt(number)


def _table_twice(check: Any, s: TensorSource) -> Fit | None:
    """Positions added twice where the table is not captured (a local): the added term twice a sinusoid table."""
    try:
        s.parameter(check.parameter)
        return None  # the table itself is known: _parameter_twice tries it
    except NotCheckable:
        pass
    joined = check.joined_after(s) and check.patches is not None
    out, x = (s.t(check.out)[:, 1:], s.t(check.patches)) if joined else (s.t(check.out), s.t(check.x))
    return added_twice_without_table(out, x, s.name(check.out))


def _encoding_transposed(check: Any, s: TensorSource) -> Fit | None:
    """Where the table is not captured: a conditional position encoding run on the grid transposed
    (conditional_positions.py)."""
    try:
        s.parameter(check.parameter)
        return None
    except NotCheckable:
        return transposed_encoding(s, check.out, check.x)


def _parameter_twice(check: Any, s: TensorSource) -> Fit | None:
    out, x, param = check.operands(s)
    fits, detail = close(out, x + 2 * param, f"vs input + 2 × {check.parameter}")
    return Fit(fits, f"the positions were added twice: your {s.name(check.out)} is its input plus twice "
               f"{check.parameter} ({detail})" if fits else detail)


@dataclass(frozen=True, kw_only=True)
class PlusParameter(Check):
    """``out`` is ``x`` plus the learned ``parameter`` (e.g. position embeddings)."""
    CLAIM = "is its input plus a learned table (the positions)"

    # the table the line read, or the one parameter of the module of the user's it called (``self.pos_embed(x)``); the
    # local tensors it read: its input where no snapshot shows it (a norm inside the patcher, reading/positions_read.py)
    TRACE = TraceUse(calls={"parameter": (ModuleKind.READ, "weight")},
                     also_calls=frozenset({ModuleKind.USER, ModuleKind.EMBEDDING}), reads_locals=True)
    WEIGHTS_OPTIONAL = True  # without the table: the added term the same for every item (same_for_every_item)
    BUG_FORMS = (BugForm("positions added twice", "the output vs input + 2 × the parameter", _parameter_twice),
                 BugForm("positions added twice", "without the table: the added term vs twice a sinusoid table",
                         _table_twice),
                 BugForm("position encoding on the transposed grid", "without the table: the step with the grid's "
                         "height and width swapped back vs its input plus a depthwise convolution of it",
                         _encoding_transposed), BugForm(FIRST_ROW_EVERYWHERE, TESTED, first_row_of_parameter))

    OPTIONAL = (("patches",),)

    out: Ref = THIS
    x: Ref
    parameter: ParamRef
    # the patch embeddings, for a ViT whose class token joins after the positions were added: the step then holds
    # the patches with their positions, read with the class token's row as it joined in front (its input, the tokens,
    # is that same tensor), and a table of one row per patch
    patches: Ref | None = None

    def bound_by(self, calls: CallBinder[BoundT]) -> BoundT | None:
        """The table the line read, or an ``nn.Embedding``'s lookup of the positions it read (learned_positions.py)."""
        return calls.declared(self) or calls.positions(self)

    def added(self, s: TensorSource) -> torch.Tensor:
        """The parameter as added: a table for longer sequences, its first rows."""
        param = s.parameter(self.parameter)
        if param.dim() >= 2 and param.shape[-2] > s.t(self.x).shape[-2]:
            param = param[..., : s.t(self.x).shape[-2], :]
        return param

    def joined_after(self, s: TensorSource) -> bool:
        """Whether the class token joined after the positions were added: the step is its input (the tokens were read
        with the step's rows) and holds one row more than the patches."""
        if self.patches is None or not s.has(self.patches):
            return False
        out, patches = s.t(self.out), s.t(self.patches)
        return (out.dim() == patches.dim() == 3 and out.shape[1] == patches.shape[1] + 1
                and out.shape[0] == patches.shape[0] and bool(torch.equal(out, s.t(self.x))))

    def operands(self, s: TensorSource) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(the step, what the table was added to, the table as added): the patch rows and the patch embeddings where
        the class token joined after the positions."""
        if self.patches is not None and self.joined_after(s):
            patches, param = s.t(self.patches), s.parameter(self.parameter)
            if param.dim() >= 2 and param.shape[-2] > patches.shape[-2]:  # a row for the class token besides
                param = param[..., -patches.shape[-2]:, :]
            return s.t(self.out)[:, 1:], patches, param
        return s.t(self.out), s.t(self.x), self.added(s)

    def run(self, s: TensorSource) -> CheckResult:
        """Where the tokens are not captured and the step holds as many rows as the patches (no class token, or one
        joining later), the positions were added to the patch embeddings themselves: read with those."""
        if (self.patches is not None and not s.has(self.x) and s.has(self.patches) and s.has(self.out)
                and s.t(self.out).shape == s.t(self.patches).shape):
            return replace(self, x=self.patches, patches=None).run(s)
        return super().run(s)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        after = self.joined_after(s)
        try:
            out, x, param = self.operands(s)
        except NotCheckable as lack:  # the table not captured: what the tensors alone say of the added term
            if after and self.patches is not None:
                claim, passed, detail = same_for_every_item(s.t(self.out)[:, 1:], s.t(self.patches), lack)
                return claim + ", added to the patches before the class token joined", passed, detail
            claim, passed, detail = same_for_every_item(s.t(self.out), s.t(self.x), lack)
            if not passed and (conditional := conditional_encoding(s, self.out, self.x)) is not None:
                return conditional[0], True, f"{detail}; {conditional[1]}"  # the term depends on the tokens
            return claim, passed, detail
        passed, detail = close(out, x + param, f"{'the patches' if after else 'input'} + {self.parameter}")
        if after:
            return ("equals the patch embeddings plus the learned position embeddings, added before the class token "
                    "joined"), passed, detail
        return "equals its input plus the learned position embeddings", passed, detail


def farthest_row_sum(probs: torch.Tensor) -> tuple[float, float]:
    """The sum over the last axis farthest from 1, and how far it is: the property every probability row keeps."""
    off = (probs.sum(-1) - 1).flatten()
    at = int(off.abs().argmax())
    return float(off[at]) + 1, float(off[at].abs())


def _sums_to_one(check: Any, s: TensorSource) -> str | None:
    probs = s.t(check.out)
    row_sum, worst = farthest_row_sum(probs)
    negative = int((probs < 0).sum())
    if worst <= tolerance() and negative == 0:
        return None
    return (f"your {s.name(check.out)} is not a probability distribution over its last axis: a row sums to "
            f"{row_sum:.4g}, {negative} negative values")


@dataclass(frozen=True, kw_only=True)
class Probabilities(Check):
    """Tensors only: ``out`` is the softmax of ``logits`` and sums to 1."""
    CLAIM = "is the softmax of the logits and sums to 1"

    PROPERTIES = (Property("probabilities sum to 1", "every row's sum and sign", _sums_to_one, alone=True),)

    out: Ref = THIS
    logits: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        probs = s.t(self.out)
        total = float(probs.sum(-1).max())
        passed, detail = close(probs, torch.softmax(s.t(self.logits), dim=-1), "recomputed softmax of the logits")
        passed &= abs(total - 1) <= tolerance()
        return "probabilities sum to 1", passed, f"sum = {total:.6f}; " + detail


@dataclass(frozen=True, kw_only=True)
class EqualsParameter(Check):
    """``out`` is the learned ``parameter``, repeated over the batch."""
    CLAIM = "is a learned parameter, repeated over the batch"

    TRACE = TraceUse(calls={"parameter": (ModuleKind.READ, "weight")})

    out: Ref = THIS
    parameter: ParamRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        value = s.t(self.out)
        expected = s.parameter(self.parameter).expand_as(value)
        passed, detail = close(value, expected, f"vs the learned parameter {self.parameter}")
        return f"is the learned parameter {self.parameter}, repeated per image", passed, detail


@dataclass(frozen=True, kw_only=True)
class ResidualBlock(Check):
    """``out`` is the whole ``block`` re-run in float64 on its recorded input ``x``."""
    CLAIM = "is the whole block run again on its input"

    out: Ref = THIS
    x: Ref
    block: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        module = copy.deepcopy(s.module(self.block)).double().cpu()
        with torch.no_grad():
            expected = module(s.t(self.x))
        passed, detail = close(s.t(self.out), expected, "the block re-run in float64 on its recorded input")
        return "equals the block applied to its input", passed, detail
