"""Checks that only a traced module call makes possible: a patch embedding computed by a Conv2d, recomputed from the
convolution's own weights on the image it was called with, or by a chain of modules (a rearrange into patch rows, then
LayerNorms and Linears), each recomputed from its own weights; a head split checked against the projection the marked
line read (generator/trace/reading/weights.py binds them)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import math

import torch
import torch.nn.functional as F

from transformer_trace.checks.base import NOT_CHECKABLE, Check, CheckResult, THIS, close, settings, weight_and_bias
from transformer_trace.checks.evidence import BugForm, Fit, find_evidence
from transformer_trace.checks.grouped import fitted_heads, kv_heads
from transformer_trace.checks.head_norm import normed_heads
from transformer_trace.checks.interleaved_heads import head_split
from transformer_trace.checks.per_head_parts import PARTS_OVER_HEADS, heads_merged, parts_over_heads, per_head_part
from transformer_trace.checks.projected_alike import equal_to_earlier_part
from transformer_trace.checks.rotary import XPOS_WRONG_WAY, rotation_of
from transformer_trace.checks.values import SumOf
from transformer_trace.sources import ModuleRef, NotCheckable, Ref, TensorSource


def _grid_reshaped(check: GridMovedLast | ConvPatches, s: TensorSource) -> Fit | None:
    """The convolution's (B, C, h, w) output (as the line read it, or recomputed from the convolution the line called)
    read straight as (B, N, C) by a reshape or a view: channels and positions mixed."""
    got, grid = s.t(check.out), check.grid_maps(s)
    if got.numel() != grid.numel():
        return None
    made_by = getattr(check, "made_by", "") or "the convolution's output"  # or the max-pool's, a tokenizer's map
    fits, detail = close(got, grid.reshape(got.shape), f"vs {made_by} {tuple(grid.shape)} reshaped to "
                         f"{tuple(got.shape)}")
    return Fit(fits, f"the patch grid was reshaped where its channels axis must move last: your {s.name(check.out)} is "
                     f"{made_by} {tuple(grid.shape)} read straight as {tuple(got.shape)}, channels and positions mixed "
                     f"({detail})" if fits else detail)


# the claim a head split of the queries scaled by 1/√hs on the line that takes them adds: the scores of such queries are
# Q·Kᵀ/√hs (trace/reading/scaled_queries.py reads the scores check's "1/√d missing" against it)
QUERIES_SCALED_WHERE_TAKEN = ", scaled by 1/√hs where the queries are taken"
HEADS_SPLIT_WITHOUT_MOVING = "heads split without moving the axis"
GRID_RESHAPED = BugForm("patch grid reshaped instead of permuted", "the output vs the convolution's output "
                        "reshaped straight to (B, N, C)", _grid_reshaped)


def _grid_by_columns(check: GridMovedLast | ConvPatches, s: TensorSource) -> Fit | None:
    """The convolution's (B, C, h, w) output with its channels moved last, the positions taken column by column (its
    grid's axes swapped before the flatten: ``transpose(2, 3).flatten(2)``), where row by row belongs."""
    got, grid = s.t(check.out), check.grid_maps(s)
    if grid.dim() != 4 or grid.shape[-2:] == (1, 1) or got.numel() != grid.numel():
        return None
    by_columns = grid.transpose(2, 3).flatten(2).transpose(1, 2)
    fits, detail = close(got.reshape(by_columns.shape), by_columns, "vs the convolution's output, positions column by "
                         "column")
    return Fit(fits, f"the patches are taken column by column: your {s.name(check.out)} is the convolution's "
                     f"{tuple(grid.shape)} output with the grid's height and width swapped before it was flattened, "
                     f"patch (row r, column c) at position c·{grid.shape[2]} + r where r·{grid.shape[3]} + c belongs "
                     f"({detail})" if fits else detail)


GRID_BY_COLUMNS = BugForm("patches taken column by column", "the output vs the convolution's output flattened with "
                          "its grid's height and width swapped", _grid_by_columns)


@dataclass(frozen=True, kw_only=True)
class ConvPatches(Check):
    """``out`` (B, N, C) is the Conv2d ``module`` applied to the image ``x`` (B, 3, H, W), its (B, C, H/p, W/p) output
    read position by position (row-major): a patch embedding, the Linear of each flattened patch."""

    BUG_FORMS = (GRID_RESHAPED, GRID_BY_COLUMNS)

    out: Ref = THIS
    x: Ref
    module: ModuleRef

    def grid_maps(self, s: TensorSource) -> torch.Tensor:
        """The convolution's (B, C, h, w) output, recomputed from its weights on the image it was called with."""
        conv = s.module(self.module)
        weight, bias = weight_and_bias(conv)
        return F.conv2d(s.t(self.x), weight, bias, *settings(conv, "stride", "padding", "dilation", "groups"))

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        weight, _ = weight_and_bias(s.module(self.module))
        maps = self.grid_maps(s)
        expected = maps.flatten(2).transpose(1, 2)  # (B, C, h, w) -> (B, h·w, C)
        got = s.t(self.out)
        passed, detail = close(got.reshape(expected.shape) if got.numel() == expected.numel() else got, expected,
                               f"recomputed the {tuple(weight.shape[-2:])} convolution with {s.name(self.module)}'s "
                               "weights on the image it was called with, positions row by row")
        return "equals the patch embedding (the convolution of each patch)", passed, detail


@dataclass(frozen=True, kw_only=True)
class GridMovedLast(Check):
    """``out`` (B, N, C), the patch embeddings, is ``grid``, the patch convolution's output as the marked line read it
    (channels first: (B, C, h, w) or (B, C, h·w)), with its channels moved last, position by position (row-major): the
    line's own step, checked where the convolution ran on an earlier, unmarked line (its weights not captured)."""

    BUG_FORMS = (GRID_RESHAPED, GRID_BY_COLUMNS)

    out: Ref = THIS
    grid: Ref
    # what made the grid, in words: "" for the convolution's output the line read (the convolution ran on an earlier
    # line); a max-pool's output the line called, for a convolutional tokenizer (reading/patch_grid.py)
    made_by: str = ""

    def grid_maps(self, s: TensorSource) -> torch.Tensor:
        return s.t(self.grid)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        expected = s.t(self.grid).flatten(2).transpose(1, 2)  # (B, C, h, w) -> (B, h·w, C)
        if self.made_by:
            passed, detail = close(s.t(self.out), expected, f"vs {self.made_by}, its channels moved last, positions "
                                   "row by row")
            return f"is {self.made_by} with its channels moved last (a convolutional tokenizer's map)", passed, detail
        passed, detail = close(s.t(self.out), expected, "vs the convolution's output the line read, its channels moved "
                               "last, positions row by row")
        return ("is the patch convolution's output with its channels moved last (the convolution ran on an earlier "
                "line: its weights were not captured)"), passed, detail


def _patch_readings(image: torch.Tensor, p: int) -> dict[str, torch.Tensor]:
    """(B, N, C·p·p) rows the image's pixels are read into by the usual mistakes of a patch rearrange, one a row."""
    B, C, H, W = image.shape
    h, w = H // p, W // p
    grid = image.reshape(B, C, p, h, p, w).permute(0, 3, 5, 1, 2, 4).reshape(B, h * w, C * p * p)
    tiles = F.unfold(image, p, stride=p)  # (B, C·p·p, N), patches row by row
    return {
        f"each row holds pixels spaced {h} apart across the whole image, not one {p}×{p} patch (the rearrange reads "
        "(p1 h) where (h p1) belongs)": grid,
        "the patches are taken column by column ((w h) where (h w) belongs)":
            tiles.reshape(B, C * p * p, h, w).transpose(2, 3).reshape(B, C * p * p, h * w).transpose(1, 2),
        "the patches are of the image with its height and width swapped (a transpose)":
            F.unfold(image.transpose(-1, -2), p, stride=p).transpose(1, 2),
    }


def _patches_in_another_order(check: PatchChain, s: TensorSource) -> Fit | None:
    image, rows = s.t(check.x), s.t(check.patches)
    (_, _, H, W), N = image.shape, rows.shape[1]
    p = math.isqrt(H * W // N) if N else 0
    if rows.dim() != 3 or p == 0 or p * p * N != H * W or H % p or W % p:
        return None
    tried = []
    for how, expected in _patch_readings(image, p).items():
        if expected.shape != rows.shape:
            continue
        fits, detail = close(rows.sort(-1).values, expected.sort(-1).values, "each row's values vs those pixels")
        if fits:
            return Fit(True, f"your patch rows ({s.name(check.patches)}) are read in another pixel order: {how} "
                             f"({detail})")
        tried.append(f"{how.split(' (')[0]}: {detail}")
    return Fit(False, "; ".join(tried)) if tried else None


def through_layers(s: TensorSource, layers: tuple[ModuleRef, ...], rows: torch.Tensor) -> tuple[torch.Tensor, str]:
    """``rows`` through ``layers`` (LayerNorms and Linears, each with its own weights), and their names joined."""
    x, names = rows, []
    for ref in layers:
        layer = s.module(ref)
        weight, bias = weight_and_bias(layer)
        if hasattr(layer, "normalized_shape"):
            shape, eps = settings(layer, "normalized_shape", "eps")
            x, what = F.layer_norm(x, tuple(shape), weight, bias, eps), "LayerNorm"
        else:
            x, what = F.linear(x, weight, bias), "Linear"
        names.append(what)
    return x, " → ".join(names)


@dataclass(frozen=True, kw_only=True)
class LayersOfInput(Check):
    """``out`` is its input ``x`` (the step's own, as captured) through the chain of LayerNorms and Linears the marked
    line called (``nn.Sequential(LayerNorm, Linear, LayerNorm)``: a patch embedding normalised before and after its
    Linear), each recomputed from its own weights."""

    out: Ref = THIS
    x: Ref
    layers: tuple[ModuleRef, ...]

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        x, names = through_layers(s, self.layers, s.t(self.x))
        passed, detail = close(s.t(self.out), x, f"recomputed {names} from each module's own weights on "
                               f"{s.name(self.x)}")
        return "is its input through the LayerNorms and the Linear the line called", passed, detail


@dataclass(frozen=True, kw_only=True)
class PatchChain(Check):
    """``out`` (B, N, D) is the chain of modules a patch-embedding line called: ``patches`` (B, N, C·p·p), what the
    first of them (a rearrange) made of the image ``x`` (B, C, H, W), holds in each row the pixels of one p×p patch
    (patches row by row; any order inside a patch: the weights that read it decide), and ``layers`` (LayerNorms and
    Linears, in the order called), recomputed from their own weights on those rows, give ``out``."""

    BUG_FORMS = (BugForm("patches read in another pixel order", "each row's values vs the pixels a strided, "
                         "column-by-column or transposed reading gives", _patches_in_another_order),)

    out: Ref = THIS
    x: Ref
    patches: Ref
    layers: tuple[ModuleRef, ...]

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        image, rows = s.t(self.x), s.t(self.patches)
        (B, C, H, W), N = image.shape, rows.shape[1]
        p = math.isqrt(H * W // N) if N else 0
        if rows.dim() != 3 or p == 0 or p * p * N != H * W or H % p or rows.shape[-1] != C * p * p:
            raise NotCheckable(s.name(self.patches), f"its shape {tuple(rows.shape)} is not the {tuple(image.shape)} "
                               "image's patches, one a row")
        tiles = F.unfold(image, p, stride=p).transpose(1, 2)  # (B, N, C·p·p), patches row by row
        rows_ok, rows_detail = close(rows.sort(-1).values, tiles.sort(-1).values,
                                     f"each row's values vs its {p}×{p} patch of the image the line was called with")
        x, names = through_layers(s, self.layers, rows)
        passed, detail = close(s.t(self.out), x, f"recomputed {names} from each module's own weights on those rows")
        return ("is the image's patches, one a row, through the modules the line called", rows_ok and passed,
                f"{rows_detail}; {detail}")


def _normalised_another(check: SumWithCall, s: TensorSource) -> str | None:
    """The captured tensor the sublayer's LayerNorm was given where the stream belongs, or None."""
    if check.normalised is None:
        return None
    given = s.t(check.normalised)
    if close(given, sum((s.t(ref) for ref in check.operands[:-1]), torch.zeros_like(given)), "")[0]:
        return None
    tensors = getattr(s, "tensors", None) or {}
    return next((name for name, tensor in tensors.items() if name != s.name(check.normalised)
                 and isinstance(tensor, torch.Tensor) and tensor.shape == given.shape and tensor.is_floating_point()
                 and close(given, tensor.double(), "")[0]), None)


def _wrong_tensor_normalised(check: SumWithCall, s: TensorSource) -> Fit | None:
    other = _normalised_another(check, s)
    if other is None:
        return None
    stream = " + ".join(s.name(ref) for ref in check.operands[:-1])
    return Fit(True, f"LayerNorm of the wrong tensor: the sublayer your {s.name(check.out)} adds read a LayerNorm of "
                     f"{other}, where the stream it is added to ({stream}) belongs")


@dataclass(frozen=True, kw_only=True)
class SumWithCall(SumOf):
    """A residual sum whose last operand is taken from a module call's output (trace/reading/weights.py; never a
    call whose output is the sum itself). Where it adds up, it passes; where it does not, the step is not checkable
    rather than failed: something after the call may change its output on the way into the sum (a dropout in training
    mode, an activation module after the Linear the line called last), so that output is not known to be the operand.
    ``normalised``: what the LayerNorm that fed the sublayer on the line was given (pre-norm), the stream the sum adds
    to in every correct form; another captured tensor there is named (``self.ln_2(block_input)``)."""

    BUG_FORMS: ClassVar[tuple[BugForm, ...]] = (
        BugForm("LayerNorm of the wrong tensor", "the input of the LayerNorm that fed the sublayer vs the stream and "
                "the other captured tensors", _wrong_tensor_normalised), *SumOf.BUG_FORMS)

    normalised: Ref | None = None

    def run(self, s: TensorSource) -> CheckResult:
        """Not checkable where the sum does not add up with the call's output (``verify``), unless one of the sum's
        bug forms fits it exactly through that output (the stream taken from another point, the residual dropped, an
        operand counted twice): what changes an output after the call (an activation, a dropout) does not make it an
        exact fit of a bug by chance, so the fit is evidence. The forms are tried without the LayerNorm's input too: a
        stream added from another point than the one the sublayer's LayerNorm read breaks that claim as well."""
        result = super().run(s)
        if result.status != NOT_CHECKABLE or not all(s.has(ref) for ref in self.inputs()):
            return result
        evidence, _ = find_evidence(self, s)
        if evidence is None and self.normalised is not None:
            evidence, _ = find_evidence(dataclasses.replace(self, normalised=None), s)
        if evidence is None:
            return result
        claim, _, detail = SumOf.verify(self, s)
        return CheckResult(name=claim, passed=False, detail=f"{evidence.message}; {detail}", evidence=evidence)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        claim, passed, detail = super().verify(s)
        if passed and (other := _normalised_another(self, s)) is not None:
            return f"{claim}, the sublayer reading a LayerNorm of that stream", False, f"its LayerNorm read {other}"
        if passed:
            return claim, passed, detail
        rest = s.t(self.out) - sum(s.t(ref) for ref in self.operands[:-1])
        called = s.t(self.operands[-1])
        kept = rest.abs() > 1e-6 * (1 + called.abs())
        dropout = bool(kept.any()) and bool((~kept).any()) and close(
            scale := rest[kept] / called[kept], torch.full_like(scale, float(scale.median())), "")[0]
        raise NotCheckable(s.name(self.operands[-1]), "a dropout after the module the line called (training mode) "
                           "changed it on its way into the sum" if dropout else "the sum does not add up with the "
                           "output of the module the line called last, which something after the call (an "
                           "activation, a dropout) may change on its way into the sum")


# another view of the marked image: what the patch embedding may have been fed instead (axes in the image's own order)
IMAGE_VIEWS = {
    "with its height and width swapped (a transpose)": lambda image: image.transpose(-1, -2),
    "upside down (its rows flipped)": lambda image: image.flip(-2),
    "mirrored (its columns flipped)": lambda image: image.flip(-1),
    "with its colour channels in reverse order (BGR for RGB)": lambda image: image.flip(-3),
}


def _another_view(check: ConsumedImage, s: TensorSource) -> Fit | None:
    got, fed = s.t(check.out), s.t(check.fed)
    if got.dim() < 3:
        return None
    tried = []
    for how, view in IMAGE_VIEWS.items():
        seen = view(got)
        if seen.shape != fed.shape:
            continue
        fits, detail = close(fed, seen, f"vs your {s.name(check.out)} {how.split(' (')[0]}")
        if fits:
            return Fit(True, f"the patch embedding was called with your {s.name(check.out)} {how}, not with the "
                             f"image as marked ({detail})")
        tried.append(detail)
    return Fit(False, "; ".join(tried)) if tried else None


@dataclass(frozen=True, kw_only=True)
class ConsumedImage(Check):
    """``out``, the input image as marked, is the image the patch embedding (a Conv2d, or a chain of modules) was
    called with: what the script marked is what the model was fed (its preprocessing is not known to a trace)."""

    BUG_FORMS = (BugForm("the image fed in another view", "the image the patch embedding read vs the marked one "
                         "transposed, flipped or its channels reversed", _another_view),)

    out: Ref = THIS
    fed: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        got, fed = s.t(self.out), s.t(self.fed)
        passed, detail = close(got.reshape(fed.shape) if got.numel() == fed.numel() else got, fed,
                               "vs the image the patch embedding was called with")
        return "is the image the model's patch embedding was called with", passed, detail


def _positions_first(whole: torch.Tensor, heads: tuple[int, ...]) -> torch.Tensor:
    """A projection split into heads, (B, N, h, hs) or (B, h, N, hs) as ``heads`` is, read as (B, N, C): what a fused
    projection's part is compared with; as it is where neither."""
    B, H, N, hs = heads
    if whole.shape == (B, N, H, hs):
        return whole.flatten(-2)
    return whole.transpose(1, 2).flatten(-2) if whole.shape == (B, H, N, hs) else whole


def _values_of_another_part(check: HeadsOfRead, s: TensorSource) -> Fit | None:
    """The step holds exactly the values of another of the attention's q, k and v, rearranged (``k =
    q.reshape(...)``: the queries split into heads a second time): computed from that one where its own projection
    belongs. Two projections of a block's input never agree value for value, so correct code never fits."""
    name = s.name(check.out)
    prefix, _, own = name.rpartition(".")
    if own not in ("q", "k", "v") or any(_holds(dataclasses.replace(check, part=other), s)
                                        for other in range(3) if other != check.part):
        return None  # another part of what the line read: the more precise form names it
    got = s.t(check.out).flatten().sort().values
    for letter in (other for other in "qkv" if other != own):
        other = Ref(f"{prefix}.{letter}")
        if not s.has(other) or s.t(other).numel() != got.numel():
            continue
        fits, detail = close(got, s.t(other).flatten().sort().values, f"its values vs those of {s.name(other)}, "
                             "both sorted")
        if fits:
            return Fit(True, f"your {name} holds exactly the values of {s.name(other)}, rearranged: the "
                             f"{own.upper()} heads were computed from the {letter.upper()} ones, where the "
                             f"{own.upper()} projection belongs ({detail})")
    return Fit(False, "its values are not those of another of q, k and v")


def _split_without_moving(check: HeadsOfRead, s: TensorSource) -> Fit | None:
    """The projection (B, N, C) reshaped straight to (B, h, N, hs), its heads axis never moved forward (``q.reshape(B,
    h, N, hs)`` for ``q.view(B, N, h, hs).transpose(1, 2)``): each head then holds rows of several positions, the
    mirror of the heads merged without moving the axis back."""
    got, (whole, _) = s.t(check.out), check.part_read(s)
    B, H, N, hs = got.shape
    if whole.shape != (B, N, H * hs) or H == 1:
        return None
    fits, detail = close(got, whole.reshape(B, H, N, hs), "vs the projection the line read reshaped straight to "
                         f"(B, {H}, {N}, {hs})")
    return Fit(fits, f"the heads were split without moving the axis: your {s.name(check.out)} is the "
                     f"{'QKV'[check.part]} projection the line read (B, N, C) reshaped straight to (B, h, N, hs), so "
                     f"each head holds slices of several positions instead of one head's channels at every position "
                     f"({detail})" if fits else detail)


def _holds(check: Check, s: TensorSource) -> bool:
    try:
        return bool(check.verify(s)[1])
    except (NotCheckable, RuntimeError, ValueError, IndexError):
        return False


@dataclass(frozen=True, kw_only=True)
class HeadsOfRead(Check):
    """``out`` (B, h, N, hs) is part ``part`` (0 q, 1 k, 2 v) of the projection the marked line read (``parts``: one
    tensor, fused or not, or the three side by side), split into heads: the head split checked where the projection's
    weights were not on the marked line."""

    BUG_FORMS = (BugForm("computed from another tensor", "the step's values vs those of another of q, k and v, "
                         "rearranged", _values_of_another_part),
                 BugForm(HEADS_SPLIT_WITHOUT_MOVING, "the step vs the projection reshaped straight to (B, h, N, hs)",
                         _split_without_moving),
                 BugForm(PARTS_OVER_HEADS, "the step vs the per-head projection the line read chunked over its heads",
                         parts_over_heads), XPOS_WRONG_WAY)

    out: Ref = THIS
    parts: tuple[Ref, ...]
    part: int
    # the fused projection's own snapshot (q, k and v side by side, (B, N, 3C)), where one shows it: a part the line
    # read that was split from it on an unmarked line must be its part ``part`` (q and k swapped in the split)
    fused: Ref | None = None

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        claim, passed, detail = self._split_of_read(s)
        read = s.t(self.parts[0])  # grouped heads, read before their repeat: their K and V projections are two
        grouped = len(self.parts) == 1 and read.dim() == 4 and read.shape[1] < s.t(self.out).shape[1]
        if passed and grouped and (same := equal_to_earlier_part(self, s)) is not None:  # another part's heads read
            passed, detail = False, f"{detail}; but it equals {same[0]} value for value ({same[1]})"
        whole = s.t(self.parts[0]) if len(self.parts) == 1 else None
        fused_ref = self.fused
        fused = s.t(fused_ref) if fused_ref is not None and s.has(fused_ref) else None
        if whole is not None and whole.dim() == 4 and fused is not None and fused.dim() == 3:
            whole = _positions_first(whole, tuple(s.t(self.out).shape))  # split into heads on an unmarked line too
        if (not passed or whole is None or fused_ref is None or fused is None
                or fused.shape[:-1] != whole.shape[:-1] or fused.shape[-1] < 3 * whole.shape[-1]):
            return claim, passed, detail
        fused = fused[..., :3 * whole.shape[-1]]  # q, k and v in its first 3C columns (a parallel block's MLP after)
        width, letter = whole.shape[-1], "QKV"[self.part]
        passed, fused_detail = close(whole, fused[..., self.part * width:(self.part + 1) * width],
                                     f"the projection the line read vs the {letter} part of {s.name(fused_ref)}")
        H, hs = s.t(self.out).shape[1], width // s.t(self.out).shape[1]
        per_head = fused.reshape(*fused.shape[:-1], H, 3 * hs)[..., self.part * hs:(self.part + 1) * hs].flatten(-2)
        if not passed and close(whole, per_head, "")[0]:  # q, k and v side by side per head (GPT-NeoX's layout)
            passed, fused_detail = close(whole, per_head, f"the projection the line read vs the {letter} part of each "
                                         f"head of {s.name(fused_ref)} (q, k and v side by side per head)")
        return f"{claim}, the {letter} part of the fused projection", passed, f"{detail}; {fused_detail}"

    def part_read(self, s: TensorSource) -> tuple[torch.Tensor, str]:
        """The part ``part`` of what the line read, whole: (B, N, C), (B, N, h, hs) or already (B, h, N, hs); and, for
        grouped-query keys or values read before their repeat, the repeat order that fits ("" otherwise)."""
        got = s.t(self.out)
        B, H, N, hs = got.shape
        read, group = [s.t(ref) for ref in self.parts], ""
        if len(read) == 3 and all(r.numel() == got.numel() for r in read):
            whole = read[self.part]
        elif len(read) == 1 and read[0].numel() == 3 * got.numel() and read[0].shape[0] == 3:
            whole = read[0][self.part]  # q, k and v stacked first: (3, B, h, N, hs)
        elif len(read) == 1 and self.part > 0 and read[0].numel() == 2 * got.numel() and read[0].shape[0] == 2:
            whole = read[0][self.part - 1]  # k and v stacked first, (2, B, h, N, hs): a fused key/value projection
        elif len(read) == 1 and read[0].numel() == 3 * got.numel() and read[0].shape[-1] == 3 * H * hs:
            whole = read[0][..., self.part * H * hs:(self.part + 1) * H * hs]  # fused side by side: (B, N, 3C)
        elif len(read) == 1 and read[0].shape == (B, H, N, 3 * hs):
            whole = read[0][..., self.part * hs:(self.part + 1) * hs]  # q, k and v side by side per head (GPT-NeoX)
        elif len(read) == 1 and read[0].numel() == got.numel():
            whole = read[0]
        elif len(read) == 1 and read[0].dim() == 4 and read[0].shape[2] == N and kv_heads(read[0], H, hs) is not None:
            whole, group = fitted_heads(read[0], H, hs, lambda heads: heads, got)  # grouped-query: the keys or values
            # the line read before their repeat to the query heads, repeated in the order that fits
        elif len(read) == 1 and (per_head := per_head_part(read[0], got, self.part)) is not None:
            whole = per_head  # q, k and v side by side per head, of other heads than the step binds
        else:
            raise NotCheckable(s.name(self.parts[0]), f"the shapes the line read, {[tuple(r.shape) for r in read]}, "
                               f"are not a projection of {B}×{N} positions")
        return whole, group

    def _split_of_read(self, s: TensorSource) -> tuple[str, bool, str]:
        got, (whole, group) = s.t(self.out), self.part_read(s)
        B, H, N, hs = got.shape
        if whole.shape == got.shape:
            expected, how = whole, "as read" + (f", {group}" if group else "")
        elif whole.shape == (B, N, H * hs):  # the usual split, or the heads interleaved in the channels
            expected, how = head_split(got, whole, H, hs)
        elif whole.shape == (B, N, H, hs):
            expected, how = whole.transpose(1, 2), "(B, N, h, hs) with its heads axis moved forward"
        elif whole.dim() == 4 and (whole.shape[0], whole.shape[2], whole.numel()) == (B, N, got.numel()):
            passed, detail = close(heads_merged(got), heads_merged(whole), f"your heads merged vs the "
                                   f"{'qkv'[self.part]} part of each of the line's {whole.shape[1]} heads of "
                                   f"{whole.shape[-1]}, merged")
            return f"is the {'qkv'[self.part].upper()} projection the line read, split into heads", passed, detail
        else:
            raise NotCheckable(s.name(self.parts[0]), f"its shape {tuple(whole.shape)} is not {B}×{N} positions")
        letter = "qkv"[self.part]
        passed, detail = close(got, expected, f"the {letter} projection the line read, {how}")
        rotary = rotation_of(got, expected, self.part) if not passed and self.part < 2 else None
        if rotary is not None:  # queries or keys marked after their rotary positions: a fitted member of the family
            passed, detail = close(got, rotary.apply(expected), f"the {letter} projection the line read, {how}, "
                                   f"rotated: {rotary}")
        scaled = not passed and rotary is None and self.part == 0 and close(got, expected / math.sqrt(hs), "")[0]
        if scaled:  # the queries scaled where they are taken (CaiT's `qkv[0] * self.scale`): the scores' own matter
            passed, detail = close(got, expected / math.sqrt(hs), f"the q projection the line read, {how}, × 1/√{hs}")
        normed = normed_heads(got, expected, f"{letter} projection the line read, {how}") \
            if not passed and self.part < 2 else None
        if normed is not None:  # QK normalisation: a norm over the head size after the split
            passed, detail = normed
        return (f"is the {letter.upper()} projection the line read, split into heads (its weights were not on the "
                "marked line)" + (", rotated by its positions" if rotary is not None else "")
                + (", normalised per head" if normed is not None else "")
                + (QUERIES_SCALED_WHERE_TAKEN if scaled else "")), passed, detail
