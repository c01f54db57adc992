"""Misses that earlier rounds measured and left (issue 40, tests/trace_fresh/ROUND3_*.md and ROUND4_*.md), each a
rule or a family of forms, held here on synthetic tensors: the correct form passes, the bug's form is named with its
evidence, and a form that is neither stays unrecognised, never red."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_trace.checks import PlusParameter, ProjectionOfHeads
from transformer_trace.checks.base import needs_evidence
from transformer_trace.reports.vit.checks import PatchesReassemble
from transformer_trace.sources import ModuleRef, ParamRef, Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.functional_weights import functional_projection
from transformer_trace.trace.reading.bound_run import run_bound

B, N1, C = 2, 10, 24


def sinusoid_table(rows: int, width: int) -> torch.Tensor:
    """The sin half, then the cos half (tensor2tensor's layout), as the variants' ViT computes it in a local."""
    angle = torch.arange(rows)[:, None] / 10000 ** (torch.arange(0, width, 2) / width)
    return torch.cat([angle.sin(), angle.cos()], dim=-1)


def positioned(term: torch.Tensor) -> TensorDict:
    tokens = torch.randn(B, N1, C, generator=torch.Generator().manual_seed(0))
    return TensorDict({"tokens": tokens, "out": tokens + term})


# the table a line built in a local: no parameter is captured, the check judges the added term from the tensors alone
POSITIONS = PlusParameter(out=Ref("out"), x=Ref("tokens"), parameter=ParamRef("pos_embedding"))


def judged(check, source):
    return needs_evidence(check.run(source))


def test_a_fixed_sinusoid_table_whose_table_is_not_captured_passes_and_is_said_to_be_one():
    result = judged(POSITIONS, positioned(sinusoid_table(N1, C)))
    assert result.passed, result.detail
    assert "a sinusoid table" in result.name and "amplitude 1" in result.detail


def test_twice_a_sinusoid_table_whose_table_is_not_captured_is_named_positions_added_twice():
    result = judged(POSITIONS, positioned(2 * sinusoid_table(N1, C)))
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "positions added twice" and "amplitude 2" in result.evidence.message


def test_a_learned_table_whose_table_is_not_captured_still_passes_as_a_term_of_the_position_only():
    learned = 0.02 * torch.randn(N1, C, generator=torch.Generator().manual_seed(1))
    for term in (learned, 2 * learned):  # twice a learned table is a learned table: no check can tell
        result = judged(POSITIONS, positioned(term))
        assert result.passed and "learned positions" in result.name, result.detail


IMAGE_SIZE, P = 12, 4


def image_and_patches(permutation: tuple[int, ...] = (0, 2, 3, 1, 4, 5)) -> TensorDict:
    """The variants' ViT's patches: unfolded, then permuted (the last two axes swapped: each patch transposed)."""
    image = torch.randn(B, 3, IMAGE_SIZE, IMAGE_SIZE, generator=torch.Generator().manual_seed(2))
    grid = image.unfold(2, P, P).unfold(3, P, P)  # (B, C, H/P, W/P, P, P)
    patches = grid.permute(*permutation).reshape(B, -1, 3, P, P)
    return TensorDict({"image": image, "out": patches})


PATCHES = PatchesReassemble(out=Ref("out"), image=Ref("image"))


def test_patches_that_reassemble_into_the_image_pass():
    assert judged(PATCHES, image_and_patches()).passed


@pytest.mark.parametrize(("permutation", "how"), [
    ((0, 2, 3, 1, 5, 4), "each patch's pixels are read column by column"),
    ((0, 3, 2, 1, 4, 5), "the patches are taken column by column"),
])
def test_patches_read_in_another_pixel_order_are_named(permutation, how):
    result = judged(PATCHES, image_and_patches(permutation))
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "patches read in another pixel order" and how in result.evidence.message


def test_patches_of_another_image_are_unrecognised_not_red():
    source = image_and_patches()
    source.tensors["image"] = torch.randn(B, 3, IMAGE_SIZE, IMAGE_SIZE, generator=torch.Generator().manual_seed(3))
    assert judged(PATCHES, source).status == "unrecognised"


# --- an output projection written as functional code, its weight and bias read from a dict the line subscripts ----

HEADS, T, HS = 3, 10, 8


def projected(merge: str, functional: str) -> tuple[TensorDict, list]:
    """S14's heads captured, S15 = (the heads merged back, or reshaped without moving the axis) @ W + b, W and b read
    from a local (``p["proj"]``), as ``x @ W + b`` (W (in, out)) or ``F.linear(x, W, b)`` (W (out, in)); no snapshot
    shows the projection's input."""
    generator = torch.Generator().manual_seed(4)
    heads = torch.randn(B, HEADS, T, HS, generator=generator)
    weight, bias = torch.randn(C, C, generator=generator) / math.sqrt(C), 0.1 * torch.randn(C, generator=generator)
    x = heads.transpose(1, 2).reshape(B, T, C) if merge == "merged" else heads.reshape(B, T, C)
    out = x @ weight + bias if functional == "x @ W + b" else torch.nn.functional.linear(x, weight, bias)
    read = ModuleCall('p["proj"]', ModuleKind.LOCAL, 0, [], [weight, bias], {}, {})
    return TensorDict({"blocks.0.attn.out": out, "blocks.0.attn.context": heads}), [read]


PROJECTION = ProjectionOfHeads(out=Ref("blocks.0.attn.out"), x=Ref("blocks.0.attn.concat"),
                               module=ModuleRef("blocks.0.attn.proj"), heads=Ref("blocks.0.attn.context"))


@pytest.mark.parametrize("functional", ["x @ W + b", "F.linear"])
def test_a_functional_projection_of_the_heads_merged_back_passes_with_the_weights_the_line_read(functional):
    source, calls = projected("merged", functional)
    bound = functional_projection(PROJECTION, calls, source)
    assert bound is not None and 'p["proj"]' in bound.note
    result = needs_evidence(run_bound(bound))
    assert result.passed and "merged back" in result.name, result.detail


@pytest.mark.parametrize("functional", ["x @ W + b", "F.linear"])
def test_a_functional_projection_of_the_heads_reshaped_without_the_transpose_is_named(functional):
    source, calls = projected("unmoved", functional)
    result = needs_evidence(run_bound(functional_projection(PROJECTION, calls, source)))
    assert result.status == "failed" and result.evidence is not None, result.detail
    assert result.evidence.name == "heads merged without moving the axis back"


def test_weights_that_reproduce_the_step_from_neither_merge_bind_nothing():
    source, calls = projected("merged", "x @ W + b")
    weight, bias = calls[0].outputs
    calls[0].outputs[:] = [weight + 1.0, bias]
    assert functional_projection(PROJECTION, calls, source) is None  # left as it was: not checkable, never red
