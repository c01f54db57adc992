"""Checks that a captured tensor is what its page claims, recomputed independently.

A check is a frozen dataclass: its fields are its parameters, typed. Fields typed ``Ref`` (or
``tuple[Ref, ...]``) are the recorded tensors it reads, its ``inputs()``; ``ModuleRef`` and
``ParamRef`` fields read the model's weights, ``InputRef`` fields a fact of the run's input; any
other field is a plain value. ``verify(source)`` recomputes the claim in float64 from a
``TensorSource`` (generator/sources.py) and returns (claim, passed, evidence in words); ``run(source)``
wraps it in a ``CheckResult`` that is passed, failed, or not checkable (naming what is missing: a
tensor the source lacks, or weights a source of captured tensors alone does not have).

A snapshot's check may leave ``out`` as ``THIS``: the snapshot binds it to the tensor it centres on.

    @dataclass(frozen=True, kw_only=True)
    class RowsSumToOne(Check):
        out: Ref = THIS
        def verify(self, s: TensorSource) -> tuple[str, bool, str]:
            error = float((s.t(self.out).sum(-1) - 1).abs().max())
            return "rows sum to 1", error <= tolerance(), f"largest deviation {error:.1e}"

Registries are explicit: ``CHECKS`` below lists the generic checks; a report's checks.py lists its
own in its ``CHECKS`` and the report merges both (a second check under a taken name is refused).
"""

from __future__ import annotations

from transformer_trace.checks.attention import (
    HeadsRejoin, LinearHeads, ScaledScores, SoftmaxRows,
)
from transformer_trace.checks.context_heads import ContextConcat, ContextHeads, FusedContextHeads
from transformer_trace.checks.base import (
    FAILED, GELU_MINIMUM, INPUT, MODULE, NOT_CHECKABLE, PARAMETER, PASSED, TENSOR, TENSORS, THIS, TOLERANCE,
    UNRECOGNISED, VALUE,
    Check, CheckResult, TraceUse, Typed, UnfittableWeights, close, field_kind, judged_at, linear, tolerance,
)
from transformer_trace.checks.masks import CausalMask, mask_allows
from transformer_trace.checks.normalisation import (
    LAYER_NORM_EPSILONS, FinalNormOrNone, LayerNormOf, LayerNormStatistics, MlpInputNorm, ResidualLayerNorm,
    ResidualSumOrPostNorm, ResidualThenNorm, fitted_layer_norm, _layer_norm,
)
from transformer_trace.checks.values import (
    EmbeddingLookup, EqualsParameter, LinearOf, PlusParameter, Probabilities, ResidualBlock, SameTensor, SumOf,
    TokensConcat, whole_ids,
)
from transformer_trace.checks.pooled_row import RowEquals
from transformer_trace.checks.activation import GeluOfLinear
from transformer_trace.checks.post_norm import ResidualOrPostNorm, ResidualSumEitherNorm
from transformer_trace.checks.head_merge import ProjectionOfHeads
from transformer_trace.checks.handed_over import HandedOverOrTokens
from transformer_trace.registry import Registry

CHECKS: Registry[type[Check]] = Registry("check", [(cls.key(), cls) for cls in (
    EmbeddingLookup, SameTensor, LinearOf, SumOf, LayerNormOf, LayerNormStatistics, ResidualLayerNorm, HeadsRejoin,
    ScaledScores, SoftmaxRows, CausalMask, ContextConcat, ContextHeads, TokensConcat, RowEquals, PlusParameter,
    Probabilities, EqualsParameter, LinearHeads, GeluOfLinear, ResidualBlock, ResidualOrPostNorm, ResidualSumEitherNorm,
    ResidualThenNorm, ResidualSumOrPostNorm, ProjectionOfHeads, MlpInputNorm, FinalNormOrNone, HandedOverOrTokens,
)])
"""The generic checks, any report may use them; a report's own are in its checks.py ``CHECKS``."""
