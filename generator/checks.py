"""Checks that a captured tensor is what its page claims, recomputed independently.

Each check takes the run (tensors, modules, inputs) and named arguments from the
catalogue, recomputes the claim in float64 from other captured tensors or the
module's weights, and returns whether it holds with the evidence in words.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from generator.indexing import parse_index
from generator.tensors import fmt

if TYPE_CHECKING:  # pragma: no cover
    from generator.run import ModelRun

# float32 forward passes against float64 recomputation: differences are rounding.
TOLERANCE = 1e-4


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    detail: str


TensorName = str  # a record name (placeholders allowed): what a check reads from the run
CHECKS: dict[str, Callable[..., CheckResult]] = {}
TENSOR_ARGUMENTS: dict[str, tuple[str, ...]] = {}  # check -> its arguments that name tensors


def check(fn: Callable[..., tuple[str, bool, str]]) -> Callable[..., CheckResult]:
    def run(run: ModelRun, **kwargs) -> CheckResult:
        name, passed, detail = fn(run, **kwargs)
        return CheckResult(name=name, passed=bool(passed), detail=detail)

    CHECKS[fn.__name__] = run
    TENSOR_ARGUMENTS[fn.__name__] = tuple(
        name for name, parameter in inspect.signature(fn).parameters.items() if "TensorName" in str(parameter.annotation)
    )
    return run


def close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> tuple[bool, str]:
    if actual.shape != expected.shape:
        return False, f"{what}: shape {tuple(actual.shape)} differs from {tuple(expected.shape)}"
    if actual.numel() == 0:
        return True, f"{what}: nothing to compare (no values)"
    diff = (actual - expected).abs()
    magnitude = expected.abs()
    if not bool(torch.isfinite(diff).all()):  # only then look for infinities on both sides (the slow path)
        both_inf = torch.isinf(actual) & torch.isinf(expected) & (torch.sign(actual) == torch.sign(expected))
        diff = diff.masked_fill(both_inf, 0.0)
        magnitude = magnitude.masked_fill(~torch.isfinite(expected), 0.0)
    worst = float(diff.max())
    scale = max(1.0, float(magnitude.max()))
    passed = math.isfinite(worst) and worst <= TOLERANCE * scale
    return passed, f"{what}: largest difference {worst:.1e} over {actual.numel():,} values (tolerance {TOLERANCE * scale:.0e})"


def linear(run: ModelRun, module: str, x: torch.Tensor) -> torch.Tensor:
    layer = run.module(module)
    weight = layer.weight.detach().double().cpu()
    bias = layer.bias.detach().double().cpu() if layer.bias is not None else None
    return F.linear(x, weight, bias)


@check
def embedding_lookup(run: ModelRun, out: TensorName, ids: TensorName, table: TensorName) -> tuple[str, bool, str]:
    expected = run.t(table)[run.t(ids).long()]  # (B, L) ids -> (B, L, C) rows
    passed, detail = close(run.t(out), expected, "each position equals its ID's table row")
    return "lookup returns the table rows of the IDs", passed, detail


# ---------------------------------------------------------------------------- generic algebra


@check
def same_tensor(run: ModelRun, out: TensorName, source: TensorName, claim: str) -> tuple[str, bool, str]:
    passed, detail = close(run.t(out), run.t(source), claim)
    return claim, passed, detail


@check
def linear_of(run: ModelRun, out: TensorName, x: TensorName, module: str, activation: str | None = None, index: str | None = None) -> tuple[str, bool, str]:
    inp = run.t(x)
    if activation == "relu":
        inp = F.relu(inp)
    expected, actual = linear(run, module, inp), run.t(out)
    if index:
        expected, actual = expected[parse_index(index)], actual[parse_index(index)]
    passed, detail = close(actual, expected, f"recomputed x·Wᵀ + b with {run.name(module)}'s weights")
    return f"equals {run.name(module)} applied to its input", passed, detail


@check
def sum_of(run: ModelRun, out: TensorName, operands: list[TensorName]) -> tuple[str, bool, str]:
    expected = sum(run.t(name) for name in operands)
    passed, detail = close(run.t(out), expected, "operands added up vs the recorded sum")
    return "the operands add up to the residual sum", passed, detail


@check
def layer_norm_of(run: ModelRun, out: TensorName, x: TensorName, module: str) -> tuple[str, bool, str]:
    ln = run.module(module)
    inp = run.t(x)
    expected = F.layer_norm(inp, ln.normalized_shape, ln.weight.detach().double().cpu(), ln.bias.detach().double().cpu(), ln.eps)
    passed, detail = close(run.t(out), expected, "recomputed LayerNorm of its input")
    normalised = F.layer_norm(inp, ln.normalized_shape, eps=ln.eps)
    detail += f"; before the affine step every position has mean {fmt(float(normalised.mean(-1).abs().max()), 6)} (max |mean|) and std {fmt(float(normalised.std(-1, unbiased=False).mean()), 4)}"
    return "equals LayerNorm(residual sum)", passed, detail


@check
def residual_layer_norm(run: ModelRun, out: TensorName, operands: list[TensorName], module: str) -> tuple[str, bool, str]:
    ln = run.module(module)
    total = sum(run.t(name) for name in operands)
    expected = F.layer_norm(total, ln.normalized_shape, ln.weight.detach().double().cpu(), ln.bias.detach().double().cpu(), ln.eps)
    passed, detail = close(run.t(out), expected, "recomputed LayerNorm(input + sublayer output)")
    return "equals LayerNorm(input + sublayer output)", passed, detail


@check
def heads_rejoin(run: ModelRun, heads: list[TensorName], full: list[TensorName]) -> tuple[str, bool, str]:
    details, passed = [], True
    for h_name, f_name in zip(heads, full):
        h = run.t(h_name)  # (B, h, L, hs)
        B, H, L, hs = h.shape
        ok, _ = close(h.transpose(1, 2).reshape(B, L, H * hs), run.t(f_name), "")  # (B, h, L, hs) -> (B, L, C)
        passed &= ok
        details.append(f"{run.name(h_name)} {'re-joins' if ok else 'does NOT re-join'} to {run.name(f_name)}")
    return "heads re-join to the full projections", passed, "; ".join(details) + " (transpose heads back, then merge h·hs)"


@check
def scaled_scores(run: ModelRun, out: TensorName, q_heads: TensorName, k_heads: TensorName) -> tuple[str, bool, str]:
    q, k = run.t(q_heads), run.t(k_heads)
    expected = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    passed, detail = close(run.t(out), expected, f"recomputed Q·Kᵀ/√{q.shape[-1]}")
    return "equals Q·Kᵀ / √hs", passed, detail


@check
def softmax_rows(run: ModelRun, out: TensorName, scores: TensorName, causal: bool = False) -> tuple[str, bool, str]:
    weights = run.t(out)
    row_sums = weights.sum(-1)
    worst_sum = float((row_sums - 1).abs().max())
    passed, detail = close(weights, torch.softmax(run.t(scores), dim=-1), "recomputed softmax of the scores")
    passed &= worst_sum <= TOLERANCE and bool((weights >= 0).all())
    detail = f"all {row_sums.numel():,} rows sum to 1 (largest deviation {worst_sum:.1e}), no weight is negative; " + detail
    if causal:
        T = weights.shape[-1]
        above = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        future = float(weights[..., above].abs().max()) if above.any() else 0.0
        passed &= future == 0.0
        detail += f"; weight on future positions: {future:g}"
    return "rows are probability distributions", passed, detail


@check
def causal_mask(run: ModelRun, out: TensorName) -> tuple[str, bool, str]:
    mask = run.t(out)
    T = mask.shape[-1]
    above = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1).expand_as(mask)
    zeros_below = bool((mask[~above] == 0).all())
    inf_above = bool(torch.isneginf(mask[above]).all())
    return "0 on and below the diagonal, −inf above", zeros_below and inf_above, (
        f"{int((~above).sum())} allowed entries are exactly 0: {zeros_below}; "
        f"{int(above.sum())} future entries are −inf: {inf_above}"
    )


@check
def context_concat(run: ModelRun, out: TensorName, probs: TensorName, v_heads: TensorName) -> tuple[str, bool, str]:
    ctx = run.t(probs) @ run.t(v_heads)  # (B, h, T, hs)
    B, H, T, hs = ctx.shape
    passed, detail = close(run.t(out), ctx.transpose(1, 2).reshape(B, T, H * hs), "recomputed (weights·V) per head, heads concatenated")  # -> (B, T, C)
    return "equals the heads' weights·V, concatenated", passed, detail


@check
def context_heads(run: ModelRun, out: TensorName, probs: TensorName, v_heads: TensorName) -> tuple[str, bool, str]:
    passed, detail = close(run.t(out), run.t(probs) @ run.t(v_heads), "recomputed attention probabilities @ V")
    return "equals probabilities @ V", passed, detail


# ---------------------------------------------------------------------------- rows, parameters, blocks


@check
def row_equals(run: ModelRun, out: TensorName, source: TensorName, row: int, claim: str) -> tuple[str, bool, str]:
    passed, detail = close(run.t(out), run.t(source)[:, row], claim)
    return claim, passed, detail


@check
def plus_parameter(run: ModelRun, out: TensorName, x: TensorName, parameter: str) -> tuple[str, bool, str]:
    param = run.parameter(parameter)
    passed, detail = close(run.t(out), run.t(x) + param, f"input + {parameter}")
    return "equals its input plus the learned position embeddings", passed, detail


@check
def probabilities(run: ModelRun, out: TensorName, logits: TensorName) -> tuple[str, bool, str]:
    probs = run.t(out)
    total = float(probs.sum(-1).max())
    passed, detail = close(probs, torch.softmax(run.t(logits), dim=-1), "recomputed softmax of the logits")
    passed &= abs(total - 1) <= TOLERANCE
    return "probabilities sum to 1", passed, f"sum = {total:.6f}; " + detail


@check
def equals_parameter(run: ModelRun, out: TensorName, parameter: str) -> tuple[str, bool, str]:
    value = run.t(out)
    passed, detail = close(value, run.parameter(parameter).expand_as(value), f"vs the learned parameter {parameter}")
    return f"is the learned parameter {parameter}, repeated per image", passed, detail


@check
def linear_heads(run: ModelRun, out: TensorName, x: TensorName, module: str, part: int) -> tuple[str, bool, str]:
    fused = linear(run, module, run.t(x))  # (B, N, 3C): q, k, v side by side
    B, N, C3 = fused.shape
    C = C3 // 3
    got = run.t(out)  # (B, h, N, hs)
    H = got.shape[1]
    expected = fused[..., part * C:(part + 1) * C].reshape(B, N, H, C // H).transpose(1, 2)  # (B, N, C) -> (B, h, N, hs)
    passed, detail = close(got, expected, f"recomputed {'qkv'[part]} = LN(x)·W{'qkv'[part]}ᵀ + b, split into {H} heads")
    return f"equals the {'QKV'[part]} part of the fused projection, split into heads", passed, detail


@check
def gelu_of_linear(run: ModelRun, out: TensorName, x: TensorName, module: str) -> tuple[str, bool, str]:
    expected = F.gelu(linear(run, module, run.t(x)))
    passed, detail = close(run.t(out), expected, "recomputed GELU(x·W₁ᵀ + b₁)")
    return "equals GELU(fc1(input))", passed, detail


@check
def residual_block(run: ModelRun, out: TensorName, x: TensorName, block: str) -> tuple[str, bool, str]:
    module = copy.deepcopy(run.module(block)).double().cpu()
    with torch.no_grad():
        expected = module(run.t(x))
    passed, detail = close(run.t(out), expected, "the block re-run in float64 on its recorded input")
    return "equals the block applied to its input", passed, detail


def run_check(run: ModelRun, name: str, args: dict) -> CheckResult:
    return CHECKS[name](run, **args)
