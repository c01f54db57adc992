"""Grouped-query and multi-query attention (Llama 2/3, Mistral, Gemma, MPT): the keys and values have h_kv heads of the
queries' head size hs, h_kv dividing the h query heads, each key/value head read by h / h_kv query heads. K and V are
then h_kv·hs wide, (B, L, h_kv·hs) whole or (B, h_kv, L, hs) per head before the repeat, (B, h, L, hs) after it.

Which query heads share a key/value head is a family of two correct forms, fitted from the numbers, never assumed:
consecutive query heads (``repeat_interleave`` on the heads axis, or ``x[:, :, None].expand(B, h_kv, n, L, hs)
.reshape(B, h, L, hs)``: query head i reads key/value head i // n), or the key/value heads tiled (``x.repeat(1, n, 1,
1)``: query head i reads key/value head i mod h_kv). Shared by every catalogue's attention checks
(checks/attention.py, checks/context_heads.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import Fit
from transformer_trace.sources import TensorSource

INTERLEAVED, TILED = "interleaved", "tiled"
ORDERS = (INTERLEAVED, TILED)
ORDER_WORDS = {INTERLEAVED: "consecutive query heads share one (repeat_interleave, or expand and reshape)",
               TILED: "query head i reads key/value head i mod h_kv (the heads tiled, repeat)"}


def kv_heads(x: torch.Tensor, h: int, hs: int | None) -> int | None:
    """The number of key/value heads h_kv of ``x`` — whole (B, L, h_kv·hs) or per head (B, h_kv, L, hs) — where they are
    fewer than the ``h`` query heads and divide them (grouped-query or multi-query attention); None otherwise."""
    if x.dim() == 3 and hs and x.shape[-1] != h * hs and x.shape[-1] % hs == 0:
        groups = x.shape[-1] // hs
    elif x.dim() == 4 and (hs is None or x.shape[-1] == hs):
        groups = x.shape[1]
    else:
        return None
    return groups if 0 < groups < h and h % groups == 0 else None


def orders_of(x: torch.Tensor, h: int, hs: int | None) -> tuple[str, ...]:
    """The group orders ``x`` can be read with: both where it is grouped by two or more key/value heads (one key/value
    head, multi-query, is read alike either way), else the one."""
    groups = kv_heads(x, h, hs)
    return ORDERS if groups is not None and groups > 1 else (INTERLEAVED,)


def as_query_heads(x: torch.Tensor, h: int, hs: int | None = None, order: str = INTERLEAVED,
                   repeat: bool = True) -> torch.Tensor:
    """``x`` per head (B, h', L, hs) or whole (B, L, W) as the ``h`` query heads read it, (B, h, L, hs): a whole tensor
    split into heads of ``hs`` where it is grouped (W = h_kv·hs), else into h; then key/value heads fewer than h
    repeated to h in ``order`` (``repeat``; else left h_kv)."""
    groups = kv_heads(x, h, hs)
    if x.dim() == 3:
        B, L, W = x.shape
        x = x.reshape(B, L, groups or h, W // (groups or h)).transpose(1, 2)  # (B, L, W) -> (B, h', L, hs)
    if groups is None or x.dim() != 4 or not repeat:
        return x
    repeats = h // groups
    return x.repeat_interleave(repeats, dim=1) if order == INTERLEAVED else x.repeat(1, repeats, 1, 1)


def fitted_order(x: torch.Tensor, h: int, hs: int | None, candidate: Callable[[str], torch.Tensor],
                 target: torch.Tensor, sort: bool = False) -> str:
    """The group order of ``x`` whose ``candidate`` (what a check recomputes with it) is nearest ``target``: by
    correlation (a scale left out or a bias added keeps the right order the nearest), or, ``sort``, by the values
    sorted (the target in another layout: heads merged without the transpose)."""
    orders = orders_of(x, h, hs)
    if len(orders) == 1:
        return orders[0]
    return max(orders, key=lambda order: _likeness(candidate(order), target, sort))


def fitted_heads(x: torch.Tensor, h: int, hs: int | None, candidate: Callable[[torch.Tensor], torch.Tensor],
                 target: torch.Tensor, sort: bool = False) -> tuple[torch.Tensor, str]:
    """``x`` as the ``h`` query heads read it (``as_query_heads``), in the group order whose ``candidate`` (what a check
    recomputes from the heads) is nearest ``target``; and what was read of a grouping, in words ("" where none)."""
    order = fitted_order(x, h, hs, lambda order: candidate(as_query_heads(x, h, hs, order)), target, sort)
    return as_query_heads(x, h, hs, order), group_note(x, h, hs, order)


def grouped_rejoin(heads: torch.Tensor, full: torch.Tensor) -> tuple[bool, str] | None:
    """Where ``full`` (B, L, h_kv·hs) has fewer heads than ``heads`` (B, h, L, hs), read after their repeat: whether
    ``heads`` is ``full`` split and repeated in the order that fits, and that order in words; None where not grouped."""
    H, hs = heads.shape[1], heads.shape[-1]
    if kv_heads(full, H, hs) is None:
        return None
    split, note = fitted_heads(full, H, hs, lambda split: split, heads)
    return close(heads, split, "")[0], note


def grouped_apart(check: Any, s: TensorSource) -> Fit | None:
    """The keys and the values (``check.heads`` re-joining ``check.full``) each their projection repeated to the query
    heads, in different orders: query head i reads one key head and another value head."""
    read = [(s.name(h_ref), grouped_rejoin(s.t(h_ref), s.t(f_ref))) for h_ref, f_ref in zip(check.heads, check.full)]
    grouped = [(name, found[1]) for name, found in read if found is not None and found[0]]
    if len({note for _, note in grouped}) < 2:
        return None
    said = "; ".join(f"{name}: {note}" for name, note in grouped)
    return Fit(True, f"the key and value heads were repeated to the query heads in different orders, so a query head "
                     f"reads the keys of one key/value head and the values of another ({said})")


def _likeness(a: torch.Tensor, b: torch.Tensor, sort: bool) -> float:
    if a.numel() != b.numel():
        return float("-inf")
    a, b = a.double().flatten(), b.double().flatten()
    if sort:
        return -float((a.sort().values - b.sort().values).abs().max())
    finite = torch.isfinite(a) & torch.isfinite(b)
    a, b = a[finite] - a[finite].mean(), b[finite] - b[finite].mean()
    norm = float(a.norm() * b.norm())
    return float(a @ b) / norm if norm else float("-inf")


def group_note(x: torch.Tensor, h: int, hs: int | None, order: str) -> str:
    """What the check read of a grouped ``x``, in words ("" where it is not grouped)."""
    groups = kv_heads(x, h, hs)
    if groups is None:
        return ""
    shared = ORDER_WORDS[order] if groups > 1 else "every query head reads it"
    return (f"grouped-query attention: {groups} key/value head{'s' if groups > 1 else ''} for {h} query heads, "
            f"{shared}")


def joined_notes(notes: Sequence[str]) -> str:
    """The distinct notes, "; " between them, in brackets ("" where there is none)."""
    said = [note for note in dict.fromkeys(notes) if note]
    return f" ({'; '.join(said)})" if said else ""
