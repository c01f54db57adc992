"""A conditional position encoding (CPVT's PEG, Twins-SVT's): the tokens, kept as a grid, plus a depthwise k×k
convolution of themselves, ``x + conv(x)``, so the term added depends on the tokens, not on the position alone. Without
the convolution's weights (the line that adds it calls no module) the family is fitted from the tensors: per channel
k² weights and a bias by least squares over every item and grid position, far fewer unknowns than the equations they
must meet (``ENOUGH``), the grid's height and width each factorisation of the token count; a term that is only a
multiple of the input per channel (a 1×1 kernel: ``x + x``) mixes no neighbour and is not of it. The family cannot tell
``conv(x)`` from ``x + conv(x)`` (the identity is one more kernel), so the encoding without its input is no bug form;
the grid read transposed is: read with its height and width swapped back, the step is its input plus such a term.

Where the catalogue's input does not fit, each captured tensor of the step's shape that ran before it is tried as the
encoding's input (``inputs_tried``): CPVT and Twins place the encoding after each stage's first block, on that block's
output, a placement the term's dependence on the tokens allows (a table of positions belongs before the blocks)."""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import Fit
from transformer_trace.sources import Ref, TensorSource

KERNELS = (3, 5, 7)
ENOUGH = 4  # equations per unknown, at least, for a fit to be evidence of the family


def _grids(tokens: int) -> Iterator[tuple[int, int]]:
    """Each (H, W) with H·W = ``tokens``, both at least 2, the squarest first."""
    pairs = [(h, tokens // h) for h in range(2, tokens // 2 + 1) if tokens % h == 0]
    yield from sorted(pairs, key=lambda hw: abs(hw[0] - hw[1]))


def _depthwise(term: torch.Tensor, x: torch.Tensor, H: int, W: int, k: int) -> tuple[bool, str]:
    """Whether ``term`` (B, H·W, C) is a depthwise k×k convolution (zero padding k // 2, a bias) of ``x`` read as an
    H × W grid, the kernels fitted by least squares, per channel."""
    B, N, C = x.shape
    grid = x.reshape(B, H, W, C).permute(0, 3, 1, 2)
    patches = F.unfold(grid, k, padding=k // 2).reshape(B, C, k * k, N).permute(1, 0, 3, 2).reshape(C, B * N, k * k)
    design = torch.cat([patches, patches.new_ones(C, B * N, 1)], dim=-1)
    target = term.permute(2, 0, 1).reshape(C, B * N, 1)
    weights = torch.linalg.lstsq(design, target).solution
    fitted = (design @ weights).reshape(C, B, N).permute(1, 2, 0)
    return close(term, fitted, f"the added term vs a depthwise {k}×{k} convolution of the input read as a {H} × {W} "
                               "grid, its kernels and bias fitted per channel")


def depthwise_of_input(out: torch.Tensor, x: torch.Tensor) -> tuple[bool, str] | None:
    """``out`` − ``x`` as a depthwise convolution of ``x`` (the module docstring), (B, N, C) each: whether one grid
    and kernel size fit, and the numbers; None where no grid and kernel leave enough equations per unknown."""
    if out.dim() != 3 or out.shape != x.shape:
        return None
    B, N, _ = x.shape
    term, tried = out.double() - x.double(), None
    if _depthwise(term, x.double(), 1, N, 1)[0]:
        return None  # a multiple of the input per channel (``x + x``): no neighbour mixed in, no convolution's term
    for H, W in _grids(N):
        for k in KERNELS:
            if k > max(H, W) or B * N < ENOUGH * (k * k + 1):
                continue
            fits, detail = _depthwise(term, x.double(), H, W, k)
            if fits:
                return True, detail
            tried = tried or (False, detail)
    return tried


CLAIM = ("equals its input plus a depthwise convolution of it over the token grid (a conditional position encoding: "
         "CPVT's PEG, Twins)")


def on_the_transposed_grid(out: torch.Tensor, x: torch.Tensor, name: str) -> Fit | None:
    """The bug form: the step's grid has its height and width swapped (the convolution given the grid transposed and
    the stage going on with it): read with them swapped back it is its input plus a depthwise convolution of it."""
    if out.dim() != 3 or out.shape != x.shape:
        return None
    B, N, C = out.shape
    for H, W in _grids(N):
        back = out.reshape(B, W, H, C).transpose(1, 2).reshape(B, N, C)  # the step was a W × H grid: H × W again
        found = depthwise_of_input(back, x)
        if found is not None and found[0]:
            return Fit(True, f"your {name} is the grid with its height and width swapped: read as a {W} × {H} grid "
                             f"transposed back, it is its input plus a depthwise convolution of it ({found[1]}), so "
                             "the position encoding ran on the transposed grid and the tokens stayed so")
    return Fit(False, "read with the grid's height and width swapped back, the step is no input plus a depthwise "
                      "convolution of it either")


def inputs_tried(s: TensorSource, out: Ref, x: Ref) -> Iterator[tuple[str, torch.Tensor]]:
    """The encoding's input as the catalogue names it, then each captured tensor of the step's shape that ran before
    the step in this run (the pages' order: ``TracedRun.ran_after``), as (its name, the tensor)."""
    yield s.name(x), s.t(x)
    ran_after = getattr(getattr(s, "run", None), "ran_after", None)
    step, shape = s.name(out), s.t(out).shape
    for name, tensor in getattr(s, "tensors", {}).items():
        if (name not in (step, s.name(x)) and tensor.shape == shape and tensor.is_floating_point()
                and ran_after is not None and ran_after(step, name)):
            yield name, tensor.detach().cpu().double()


def conditional_encoding(s: TensorSource, out: Ref, x: Ref) -> tuple[str, str] | None:
    """The claim and the numbers where the step is a conditional position encoding of its input or of a tensor that
    ran before it (``inputs_tried``); None where none fits."""
    for name, given in inputs_tried(s, out, x):
        found = depthwise_of_input(s.t(out), given)
        if found is not None and found[0]:
            placed = "" if name == s.name(x) else f", of {name}, which ran before it (placed after a block, as CPVT " \
                                                 "and Twins place it)"
            return CLAIM + placed, found[1]
    return None


def transposed_encoding(s: TensorSource, out: Ref, x: Ref) -> Fit | None:
    """``on_the_transposed_grid`` of the step for each input ``inputs_tried`` gives, the first that fits."""
    fit = None
    for _, given in inputs_tried(s, out, x):
        fit = on_the_transposed_grid(s.t(out), given, s.name(out))
        if fit is not None and fit.fits:
            return fit
    return fit
