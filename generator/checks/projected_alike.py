"""K or V holding, value for value, what an earlier of q, k and v holds: the later one projected by the earlier one's
Linear (`k = self.w_q(z)`, a copy-paste slip), or computed from its heads. Two projections of one input never agree
value for value, so correct code never fits; the later of the two is the one named, the catalogue's order q, k, v,
unless the name of the Linear the step's line called says otherwise (a trace's, trace/reading/called_names.py): K
computed with `self.wv` equals V, and V, computed with its own `self.wv`, is the right one of the two."""

from __future__ import annotations

import re
from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import Fit
from transformer_trace.sources import ModuleRef, NotCheckable, Ref, TensorSource

# a projection's name that gives its letter: w_q, Wq, to_k, q_proj, linear_v, query, key_layer, value
LETTERED = re.compile(r"(?:w_?|to_?|proj_?|linear_?|lin_?)?(?P<letter>q|k|v|query|key|value)"
                      r"(?:_?(?:proj|projection|linear|lin|layer|w|weight))?")
WORDS = {"query": "q", "key": "k", "value": "v"}


def equal_to_earlier_part(check: Any, s: TensorSource) -> tuple[str, str] | None:
    """The earlier of q, k and v (in that order) that the step (K or V) equals value for value where both were
    captured, with the comparison's detail; None where none does. Two projections of one input never agree value for
    value, so the later of the two was projected as the earlier one was (its Linear called twice: `k = self.w_q(z)`).
    Where the Linear the step's line called is named for one of the three (``called_letter``), that name decides:
    its own, never; another's, whichever of the other two it equals (`k = self.wv(x)` equals the later v)."""
    prefix, _, own = s.name(check.out).rpartition(".")
    got, called = s.t(check.out), called_letter(check, s)
    if own not in ("q", "k", "v") or called == own or own == "q" and called is None or float(got.abs().max()) == 0.0:
        return None  # (its line called its own projection, by name: the other step is the one computed wrongly)
    for letter in "qkv"[:"qkv".index(own)] if called is None else (other for other in "qkv" if other != own):
        other = Ref(f"{prefix}.{letter}")
        if s.has(other) and s.t(other).shape == got.shape:
            same, detail = close(got, s.t(other), f"vs {s.name(other)}")
            if same:
                return s.name(other), detail
    return None


def called_letter(check: Any, s: TensorSource) -> str | None:
    """The letter (q, k or v) the name of the Linear the step's line called gives it (``wv``, ``W_Q``, ``to_k``,
    ``query_proj``); None where the check reads no such Linear or its name gives none."""
    called = _called_as(check, s)
    found = LETTERED.fullmatch(called.rsplit(".", 1)[-1].lower()) if called is not None else None
    return None if found is None else WORDS.get(found["letter"], found["letter"])


def _called_as(check: Any, s: TensorSource) -> str | None:
    module = getattr(check, "module", None)
    try:
        called = getattr(s.module(module), "called_as", None) if isinstance(module, ModuleRef) else None
    except NotCheckable:
        return None
    return called if isinstance(called, str) else None


def projected_as_another(check: Any, s: TensorSource) -> Fit | None:
    found = equal_to_earlier_part(check, s)
    if found is None:
        return None
    own = s.name(check.out).rpartition(".")[2].upper()
    called = f" (`{_called_as(check, s)}`, by its name)" if called_letter(check, s) is not None else ""
    return Fit(True, f"your {s.name(check.out)} equals {found[0]} value for value: the {own} heads were computed "
                     f"with the projection (or from the heads) of {found[0]}{called}, where the {own} projection "
                     f"belongs ({found[1]})")


def kv_part(fused: torch.Tensor, got: torch.Tensor, part: int) -> tuple[torch.Tensor, bool, str] | None:
    """Part ``part`` (1 k, 2 v) of a Linear making k and v side by side without q (PVT's ``kv`` of the reduced
    sequence), split into ``got``'s heads, where ``got`` (B, h, N, hs) is that part value for value: (it, True, the
    comparison); else None."""
    B, N, width = fused.shape
    if part < 1 or width != 2 * got.shape[1] * got.shape[-1]:
        return None
    kv = fused[..., (part - 1) * width // 2:part * width // 2].reshape(B, N, got.shape[1], -1).transpose(1, 2)
    passed, detail = close(got, kv, f"recomputed {'qkv'[part]}: its part of k and v fused, {got.shape[1]} heads")
    return (kv, True, detail) if passed else None
