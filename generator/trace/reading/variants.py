"""Which architecture variant a trace recognised, and what each verdict rests on, as data: the decisions the checks
already made (a block's output that is a LayerNorm, or a plain residual sum; a final LayerNorm after the last block; an
embedding LayerNorm; how a mask says what a query may see) and what the captured tensors show (a mask's dtype and
shape, attention weights without a heads axis, a fused attention call in a marked line). Written into the outcome of
snapshots.json (``recognised``) and shown on the overview ("What was recognised").

The rules:

- Normalisation. Post-norm: a layer's output snapshot passes as a LayerNorm (of its input plus the sublayer output).
  Pre-norm: a layer's output passes as a plain residual sum; failing either, a LayerNorm after the last layer (a
  pre-norm stack ends with one). Evidence of both: not decided, and said. Neither: not recognised, and said.
- The mask: boolean, byte (uint8), 0/1 floats or additive, from its dtype and values; which value means masked, from
  the diagonal (a query may always see itself; checks/masks.py ``mask_allows``); its shape as captured.
- Attention weights with no heads axis where the heads are known (h > 1): averaged over the heads, as
  nn.MultiheadAttention returns them by default (average_attn_weights=True); with h unknown, one head or an average.
- A marked line that calls F.scaled_dot_product_attention: fused attention, whose probabilities never exist as a
  tensor of the script.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import PASSED, Check, CheckResult, ResidualOrPostNorm, ResidualSumOrPostNorm
from transformer_trace.checks.context_heads import FUSED_CLAIM
from transformer_trace.checks.masks import mask_allows
from transformer_trace.checks.values import SameTensor
from transformer_trace.models.recording import Role
from transformer_trace.trace.reading.padding_mask import padding_flags
from transformer_trace.trace.reading.run import model_dims

if TYPE_CHECKING:
    from transformer_trace.pages import SnapshotPage
    from transformer_trace.trace.reading.capture_reading import CaptureReading
    from transformer_trace.trace.reading.pages import SnapshotReading

NORMALISATION, MASK, ATTENTION = "Normalisation", "Mask", "Attention weights"


@dataclass(frozen=True)
class Recognised:
    """One recognised variant: what it concerns, which variant, and the evidence its verdict rests on."""

    what: str
    variant: str
    rests_on: str

    def json(self) -> dict[str, str]:
        return {"what": self.what, "variant": self.variant, "rests_on": self.rests_on}


def recognised(pages: list[SnapshotPage], reading: CaptureReading, dims: dict[str, int]) -> dict[str, list]:
    """The overview's "What was recognised": the variants (as JSON) and how each shared line's hits were assigned."""
    captured = [p for p in pages if p.captured]
    if not all(hasattr(p.snap, "checks") for p in pages):  # the script's own `# trace:` points: no architecture
        return {"variants": [], "told_apart": list(reading.told_apart)}
    found = [*(Recognised(*row) for row in reading.layout_read), *_normalisation(captured), *_masks(captured),
             *_attention(captured, dims, reading), *_fused_calls(reading, pages)]
    return {"variants": [r.json() for r in found], "told_apart": list(reading.told_apart)}


def dims_as_read(readings: Sequence[SnapshotReading], dims: Mapping[str, int]) -> dict[str, int | str]:
    """The named dimensions as the overview's table shows them: h = 1 bound where no captured tensor has a heads axis
    (one head written without it, per-head modules, a (B, T, h) score) is the checks' reading, not the model's count,
    and says so."""
    shown: dict[str, int | str] = dict(dims)
    model = model_dims(dims, readings)
    if model.get("h") != dims.get("h"):
        shown["h"] = (f"{model['h']} (your heads are modules of their own: the concatenation joins {model['h']} "
                      "hits of each per-head line; each per-head step is read as one head)")
        shown["hs"] = model["hs"]
    elif dims.get("h") == 1 and not any(r.captured and "h" in r.named_shape and r.tensors and r.layout is not None
                                      and r.layout.canonical is not None and not r.layout.mismatch
                                      and len(r.main.shown.shape) == len(r.named_shape) for r in readings):
        shown["h"] = "not read (no captured tensor has a heads axis; the checks read one head)"
        if "hs" in dims:
            shown["hs"] = f"{dims['hs']}, as read with one head"
    return shown


def _passed(page: SnapshotPage) -> list[tuple[Check, CheckResult]]:
    """(declared check, its result) for each check of the page that passed."""
    return [(check, result) for check, result in zip(page.snap.checks, page.checks) if result.status == PASSED]


def _is(ref: object, role: Role) -> bool:
    """Whether the catalogue declares ``ref`` to be a ``role`` (the point's or its place's, ``Ref.roles``)."""
    return role in getattr(ref, "roles", ())


def _shows(page: SnapshotPage, role: Role) -> bool:
    """Whether the page's tensor is declared a ``role``."""
    return bool(page.snap.tensors) and _is(page.snap.tensors[0], role)


def _evidence(page: SnapshotPage, result: CheckResult) -> str:
    return f"{page.label}: {result.name} ({_short(result.detail)})"


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _normalisation(pages: list[SnapshotPage]) -> list[Recognised]:
    post: list[str] = []
    pre: list[str] = []
    final: list[str] = []
    embedding: list[str] = []
    for page in pages:
        layer_output = _shows(page, Role.LAYER_OUTPUT)
        for check, result in _passed(page):
            kind = type(check).__name__
            read = getattr(check, "x", getattr(check, "source", ""))
            if layer_output and kind in ("ResidualLayerNorm", "LayerNormOf"):
                post.append(_evidence(page, result))
            elif layer_output and isinstance(check, ResidualOrPostNorm):  # either form: the one held
                (post if result.name == check.post_claim else pre).append(_evidence(page, result))
            elif layer_output and isinstance(check, ResidualSumOrPostNorm):  # either: the one held
                # a norm's claim only is post-norm evidence: a sum held as LayerScale (ReZero's α) has no norm after it
                normed = result.name != check.sum_claim and "norm" in result.name.lower()  # LayerNorm, RMSNorm
                (post if normed else pre).append(_evidence(page, result))
            elif layer_output and kind == "SameTensor" and _is(read, Role.RESIDUAL_SUM):
                pre.append(_evidence(page, result))  # the layer ends with its residual sum, no norm after it
            elif _is(read, Role.LAST_LAYER) and _is(read, Role.LAYER_OUTPUT) and (
                    kind in ("LayerNormOf", "FinalNormOrNone") and "no final LayerNorm" not in result.name
                    or result.name.endswith(", normalised")):
                final.append(_evidence(page, result))
            elif isinstance(check, SameTensor) and result.name.endswith(", normalised"):  # HandedOverOrTokens too
                embedding.append(_evidence(page, result))
    found = []
    if post and pre:
        found.append(Recognised(NORMALISATION, "not decided: evidence of both post-norm and pre-norm",
                                "; ".join([*post, *pre])))
    elif post:
        found.append(Recognised(NORMALISATION, "post-norm (LayerNorm after each residual sum)", "; ".join(post)))
    elif pre or final:
        why = "; ".join(pre) or "a LayerNorm after the last layer, as a pre-norm stack ends: " + "; ".join(final)
        found.append(Recognised(NORMALISATION, "pre-norm, or no norm at all (no LayerNorm after the residual sums: "
                                               "the residual stream left un-normalised)", why))
    else:
        found.append(Recognised(NORMALISATION, "not recognised", "no check that tells them apart could run: mark a "
                                "layer's output (post-norm: a LayerNorm of input + sublayer output; pre-norm: a "
                                "plain residual sum) or the last layer's output and the LayerNorm after it"))
    if embedding:
        found.append(Recognised(NORMALISATION, "a LayerNorm between the embeddings and the first layer",
                                "; ".join(embedding)))
    return found


def mask_form(mask: torch.Tensor) -> tuple[str, str]:
    """(the mask's form, which value means masked), read from its dtype and values as the checks read them."""
    allowed, kind = mask_allows(mask)
    if mask.dtype == torch.bool:
        form = "boolean"
    elif not mask.is_floating_point():
        form = f"byte ({str(mask.dtype).removeprefix('torch.')})" if mask.dtype in (torch.uint8, torch.int8) else \
            f"integer ({str(mask.dtype).removeprefix('torch.')})"
    elif kind.startswith("boolean"):
        form = "0/1 floats"
    else:
        blocked = mask[~allowed.expand_as(mask)] if allowed.shape == mask.shape else mask[mask <= -1e9]
        finite = blocked.numel() and not bool(torch.isinf(blocked).all())
        shown = f"{float(blocked[~torch.isinf(blocked)].max()):g}" if finite else "−inf"
        return "additive", f"{shown} = masked, 0 = allowed (added to the scores)"
    if kind.endswith("True = allowed"):
        return form, ("True" if form == "boolean" else "1") + " = allowed, " + \
            ("False" if form == "boolean" else "0") + " = masked"
    return form, ("True" if form == "boolean" else "1") + " = masked"


def _masks(pages: list[SnapshotPage]) -> list[Recognised]:
    found = []
    for page in pages:
        if not _shows(page, Role.MASK) or page.main.absent:
            continue
        mask = page.main.shown.tensor
        if mask.dim() < 2 or mask.numel() == 0:
            continue
        form, meaning = mask_form(mask)
        dtype = str(mask.dtype).removeprefix('torch.')
        told = "the diagonal, which a query may always see, tells which value allows"
        drops = mask.is_floating_point() and bool((mask <= -1e4).any())
        if form == "additive" and drops:  # its values tell: a large negative value sends a weight to 0
            told = "an additive mask's values tell which value allows (0 leaves a score as it is)"
        elif padding_flags(mask) is not None:  # one flag per position: no diagonal, and no captured tensor tells
            form, meaning = "a padding mask over the positions", "which value keeps a position: not read"
            told = "one flag per position, broadcast over the queries: no diagonal tells which value keeps"
        shape = tuple(mask.shape)
        per = ("one per batch item" if mask.dim() >= 3 and shape[0] > 1 else "one for the whole batch") + \
            (", broadcast over the heads" if mask.dim() == 4 and shape[1] == 1 else "")
        sliced = f"; {page.main.note}" if page.main.note.startswith("the slice") else ""
        found.append(Recognised(f"{MASK} ({page.label})", f"{form}, {meaning}; shape {shape}, {per}{sliced}",
                                f"{page.label}'s captured tensor ({dtype}): {told}"))
    return found


def _attention(pages: list[SnapshotPage], dims: dict[str, int], reading: CaptureReading) -> list[Recognised]:
    found = []
    for page in pages:
        if not _shows(page, Role.ATTENTION_WEIGHTS) or page.main.absent:
            continue
        named, got = page.shape, page.main.shown.shape
        heads = dims.get("h")
        folded = bool(heads and heads > 1 and got and got[0] == dims.get("B", 0) * heads)  # (B·h, T, T): not averaged
        if "h" not in named or len(got) != len(named) - 1 or folded:
            continue
        module = _multihead_call(reading, page.snap.number)
        if module:
            variant = "averaged over the heads by nn.MultiheadAttention (average_attn_weights=True, its default)"
            why = f"{page.label}'s shape {tuple(got)} has no heads axis, and {module}"
        elif heads and heads > 1:
            variant = f"averaged over the {heads} heads (no heads axis), as nn.MultiheadAttention returns them"
            why = f"{page.label}'s shape {tuple(got)} has no heads axis while h = {heads} is bound from your tensors"
        else:
            variant = "no heads axis: one head, or averaged over the heads (nn.MultiheadAttention's default)"
            why = f"{page.label}'s shape {tuple(got)} has no heads axis, and no captured tensor binds h"
        found.append(Recognised(f"{ATTENTION} ({page.label})", variant, why + "; the checks read it as one head"))
    return found


def _multihead_call(reading: CaptureReading, number: int) -> str:
    """How the line marked with ``number`` gets its weights from an nn.MultiheadAttention, read from the source: it
    calls ``self.name(...)`` and its file assigns ``self.name = nn.MultiheadAttention(...)``; "" when it does not."""
    for marker in reading.markers:
        if number not in (marker.number, *marker.alternatives):
            continue
        text = reading.sources.get(marker.file, "")
        statement = "\n".join(text.splitlines()[marker.first - 1:marker.last])
        for name in re.findall(r"self\.(\w+)\s*\(", statement):
            assigned = re.search(rf"self\.{name}\s*=\s*(?:torch\.)?(?:nn\.)?MultiheadAttention\(", text)
            if assigned and not re.search(r"average_attn_weights\s*=\s*False", statement):
                return (f"the marked line {Path(marker.file).name}:{marker.first} gets it from self.{name}, which "
                        f"line {text.count(chr(10), 0, assigned.start()) + 1} makes an nn.MultiheadAttention")
    return ""


def _probabilities_status(probabilities: SnapshotPage, pages: list[SnapshotPage]) -> str:
    """Whether the probabilities snapshot was captured, else whether the checks that read it rebuilt it (from q and k,
    through the scores: trace/derived.py, said in their details as "G14 (derived from ...")."""
    if probabilities.captured:
        return f"{probabilities.label} captured"
    rebuilt = [p.label for p in pages if p.captured and f"{probabilities.label} (derived from" in p.check.detail]
    fused = [p.label for p in pages if p.captured and p.check.name == FUSED_CLAIM]
    if fused:
        return (f"{probabilities.label} not captured, rebuilt as softmax(Q·Kᵀ/√hs) from q and k for the check of the "
                f"context ({', '.join(fused)})")
    if rebuilt:
        return (f"{probabilities.label} not captured, rebuilt from q and k through the scores for the checks that read "
                f"it ({', '.join(rebuilt)})")
    return f"{probabilities.label} not captured (no check needed it rebuilt)"


def _fused_calls(reading: CaptureReading, pages: list[SnapshotPage]) -> list[Recognised]:
    """Marked lines that call F.scaled_dot_product_attention: the probabilities are never a tensor of the script."""
    probabilities = [p for p in pages if _shows(p, Role.ATTENTION_WEIGHTS)]
    found = []
    for marker in reading.markers:
        lines = reading.sources.get(marker.file, "").splitlines()[marker.first - 1:marker.last]
        if any("scaled_dot_product_attention" in line for line in lines):
            where = f"{Path(marker.file).name}:{marker.first}"
            status = ", ".join(_probabilities_status(p, pages) for p in probabilities)
            found.append(Recognised(ATTENTION, "fused (F.scaled_dot_product_attention): the probabilities are computed "
                                    "inside the call and never exist as a tensor of your script",
                                    f"the marked line {where} calls it; the probabilities snapshot: "
                                    f"{status or 'none in this catalogue'}"))
            break
    return found
