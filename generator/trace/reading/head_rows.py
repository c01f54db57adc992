"""The logits from classification heads whose rows the checks could not see (issue 40; round twenty's DeiT and
student ViT): a distilled ViT's two heads called on unmarked statements before the marked ``return (x_cls +
x_distill) / 2`` (feeders.py hands their calls to the line), each on one row of the last block's output; and a head
applied to every token with its row taken on the same line (``self.head(x)[:, 0]``). The catalogue's check reads one
Linear whose output is the step: neither form gives it one, so the step was not checkable and a head reading a patch,
or two heads summed, went unseen.

Read here from the line's calls: each head is recomputed from its own input and parameters (its call is what ran);
the step is their mean (the correct form: DeiT's two heads at inference) or row r of the one head's output; the row
each head read is found in the stream (the last captured hit that holds it), and the rows that may be read are the
tokens of the model's own: the rows of the earliest captured sequence of that length that are the same for every item
(the class token, a distillation token; a patch differs between images). Bug forms: a head reads a patch row; two
heads summed, not averaged. Where the tokens of the model's own cannot be read (one item, no such sequence captured),
or the step is neither form, the result stays as it was."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from transformer_trace.checks import FAILED, PASSED, CheckResult, close
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.checks.values import LinearOf
from transformer_trace.sources import TensorDict
from transformer_trace.trace.child.protocol import ModuleKind

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

READ_PATCH = "a head reads a patch row"
SUMMED = "two heads summed, not averaged"


def _heads(page: SnapshotReading) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(module, input, output) of each Linear the line called (or an unmarked statement before it) whose output its
    own input and parameters reproduce."""
    found = []
    for call in page.calls:
        given = call.inputs[0] if call.inputs else None
        output = call.outputs[0] if call.outputs else None
        weight = call.params.get("weight")
        if (call.kind != ModuleKind.LINEAR or call.depth != 1 or not isinstance(given, torch.Tensor)
                or not isinstance(output, torch.Tensor) or not isinstance(weight, torch.Tensor)):
            continue
        bias = call.params.get("bias")
        redone = F.linear(given.double(), weight.double(), bias.double() if isinstance(bias, torch.Tensor) else None)
        if redone.shape == output.shape and close(output.double(), redone, "")[0]:
            found.append((call.module, given, output))
    return found


def _sequences(pages: Sequence[SnapshotReading], width: int, items: int) -> list[tuple[str, torch.Tensor]]:
    """Every captured hit of a sequence (items, L, width), with its page's label, in the order the script ran, read in
    the catalogue's layout (a class token kept last read first), as the line's calls are."""
    found = []
    for page in sorted((p for p in pages if p.captured), key=lambda p: p.order):
        for layouts in page.hit_layouts[:1]:
            for hit in (layout.canonical if layout is not None else None for layout in layouts):
                if isinstance(hit, torch.Tensor) and hit.dim() == 3 and hit.shape[0] == items \
                        and hit.shape[2] == width and hit.is_floating_point():
                    found.append((page.label, hit))
    return found


def _row_in(sequences: list[tuple[str, torch.Tensor]], given: torch.Tensor) -> tuple[str, int, int] | None:
    """(label, row, length) of the last captured sequence holding ``given`` (items, width) as one of its rows."""
    for label, hit in reversed(sequences):
        for row in range(hit.shape[1]):
            if close(given.double(), hit[:, row].double(), "")[0]:
                return label, row, hit.shape[1]
    return None


def _own_tokens(sequences: list[tuple[str, torch.Tensor]], length: int) -> tuple[str, list[int]] | None:
    """The rows of the earliest captured sequence of ``length`` rows that are the same for every item (tokens of the
    model's own), with its label; None where there is none, or it has one item (nothing tells a patch apart)."""
    for label, hit in sequences:
        if hit.shape[1] == length and hit.shape[0] > 1:
            rows = [r for r in range(length) if close(hit[:, r].double(), hit[:1, r].expand_as(hit[:, r]).double(),
                                                     "")[0]]
            return (label, rows) if rows else None
    return None


def _judged(page: SnapshotReading, pages: Sequence[SnapshotReading], step: torch.Tensor) -> CheckResult | None:
    heads = _heads(page)
    if not heads:
        return None
    width = heads[0][1].shape[-1]
    sequences = _sequences(pages, width, step.shape[0])
    one = [(m, x, out) for m, x, out in heads if out.dim() == 3 and x.dim() == 3 and out[:, 0].shape == step.shape]
    if len(heads) >= 2 and all(out.shape == step.shape and x.dim() == 2 for _, x, out in heads):
        found = [_row_in(sequences, x) for _, x, _ in heads]
        outputs = torch.stack([out.double() for _, _, out in heads])
        mean, mean_detail = close(step.double(), outputs.mean(0), f"your logits vs the mean of the {len(heads)} heads")
        summed, sum_detail = close(step.double(), outputs.sum(0), f"your logits vs the sum of the {len(heads)} heads")
        form = ("the mean" if mean else "the sum") + f" of the {len(heads)} heads' outputs"
        detail = mean_detail if mean else sum_detail
        if not (mean or summed) or any(f is None for f in found):
            return None
        rows = [(f"head {n} ({module})", f) for n, ((module, _, _), f) in enumerate(zip(heads, found), 1)
                if f is not None]
    elif len(heads) == 1 and one:
        module, given, output = one[0]
        row = next((r for r in range(output.shape[1]) if close(step.double(), output[:, r].double(), "")[0]), None)
        if row is None:
            return None
        labels = [label for label, hit in sequences if hit.shape == given.shape and close(hit, given, "")[0]]
        rows = [(module, (labels[-1] if labels else "its input", row, given.shape[1]))]
        mean, summed, form, detail = True, False, f"row {row} of {module} applied to every token", \
            f"your logits vs row {row} of the head's output: equal"
    else:
        return None
    tokens = _own_tokens(sequences, rows[0][1][2])
    if tokens is None or len(tokens[1]) < len(rows):
        return None
    early, own = tokens
    read = "; ".join(f"{module} reads row {row} of {label}" for module, (label, row, _) in rows)
    whose = "each head's" if len(rows) > 1 else "the head's"
    said = (f"{form}, {whose} Linear recomputed from its own input and weights ({read}; the tokens of the model's own, "
            f"the same for every item at {early}: rows {', '.join(map(str, own))})")
    patches = [f"{module} reads row {row} of {label}, a patch" for module, (label, row, _) in rows if row not in own]
    if patches:
        message = (f"{'; '.join(patches)}, where a head reads a token of the model's own (rows "
                   f"{', '.join(map(str, own))} at {early}, the same for every item; a patch differs between images)")
        return _failed(READ_PATCH, message, said)
    if not mean:
        message = (f"your logits are the sum of the {len(heads)} heads' outputs, where a distilled ViT averages them: "
                   f"{detail}")
        return _failed(SUMMED, message, said)
    return CheckResult(name="the heads applied to the rows of the model's own tokens", passed=True, status=PASSED,
                       detail=f"{said}: {detail}")


def _failed(form: str, message: str, said: str) -> CheckResult:
    return CheckResult(name="the heads applied to the rows of the model's own tokens", passed=False, status=FAILED,
                       detail=f"{message}; read: {said}", evidence=Evidence(BUG_FORM, form, message))


def heads_on_rows(pages: Sequence[SnapshotReading], results: dict[int, list[CheckResult]],
                  views: Mapping[int, TensorDict],
                  in_terms: Callable[[CheckResult], CheckResult]) -> dict[int, list[CheckResult]]:
    """``results`` with each logits step the catalogue's head check could not judge read from its heads' calls (see
    the module's doc)."""
    for page in pages:
        number = page.snap.number
        # a classifier's logits, one row per item (B, K): a language model's scores per position are no head on rows
        if (not page.captured or number not in views or page.snap.stage != "output" or page.named_shape != ("B", "K")
                or not any(isinstance(check, LinearOf) for check in page.snap.checks)
                or any(r.status in (PASSED, FAILED) for r in results.get(number, []))):
            continue
        layout = page.layout
        step = layout.canonical if layout is not None and layout.canonical is not None else page.main.shown.tensor
        if not isinstance(step, torch.Tensor) or step.dim() != 2 or not step.is_floating_point():
            continue
        judged = _judged(page, pages, step)
        if judged is not None:
            results[number] = [in_terms(judged)]
    return results
