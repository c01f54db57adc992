"""The bug form "every token got position 0's vector" (round twenty-three: luulecmg's ``x += self.pos_embed[:1]
.expand(B, -1, C)``, a table without a batch axis whose first row alone was broadcast; Bhav7's ``x = x +
pos_embeddings[0]``, the first row of an ``nn.Embedding``'s lookup of ``arange(N1)``). The step is its input plus one
vector, the same at every token, and that vector is row 0 of the table the line read: every token then carries the
class token's position and the model cannot tell where a patch came from.

It is evidence only where the table's rows differ: a table initialised to zeros, or with every row alike, gives the
same step with its first row or with all of them, and no verdict can say which was added (the form does not fit
then, whatever the step)."""

from __future__ import annotations

from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import Fit
from transformer_trace.sources import TensorSource

FIRST_ROW_EVERYWHERE = "every token got position 0's vector"
TESTED = "the output vs its input plus the table's row 0 at every token (the table's rows differing)"


def first_row_everywhere(out: torch.Tensor, x: torch.Tensor, table: torch.Tensor, what: str, step: str) -> Fit | None:
    """``out`` vs ``x`` plus row 0 of ``table`` (the rows as added, (…, N, C)) at every token; None where the table has
    fewer than two rows or its rows do not differ (no evidence either way), or the shapes do not add up."""
    if table.dim() < 2 or table.shape[-2] < 2:
        return None
    first = table[..., :1, :]
    alike, _ = close(table, first.expand_as(table), "")
    if alike:
        return None  # a zero-initialised or all-equal table: its first row is every row
    fits, detail = close(out, x + first, f"vs its input plus row 0 of {what} at every token")
    if not fits:
        return Fit(False, detail)
    return Fit(True, f"every token got position 0's vector: your {step} is its input plus row 0 of {what}, the same "
                     f"vector at every token, where each token's own row belongs ({detail})")


def first_row_of_parameter(check: Any, s: TensorSource) -> Fit | None:
    """The form on a table the line read (values.py ``PlusParameter``: its operands as it reads them)."""
    out, x, param = check.operands(s)
    return first_row_everywhere(out, x, param, str(check.parameter), s.name(check.out))
