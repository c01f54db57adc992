"""What a marked line's module calls give a check (``Given``) and the check bound to them (``Bound``): the two records
every binding of trace/reading/weights.py and its helpers returns (kept apart so that a helper module can build them
without importing weights.py, which imports the helpers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch

from transformer_trace.checks import Check
from transformer_trace.sources import TensorDict


@dataclass(frozen=True)
class Given:
    """What a marked line's module call gives a page's view of the run (``base``): the tensors it is read with (the
    view's own and the call's), and the modules and parameters the call rebuilt, by the catalogue's names."""

    base: TensorDict
    tensors: Mapping[str, torch.Tensor]
    modules: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, torch.Tensor] = field(default_factory=dict)


@dataclass(frozen=True)
class Bound:
    """A check with the module call its fields were bound to (``given``), read through ``source``, the view made of
    them when the check runs: ``own_input`` is the check reading the call's own input (for the diagnosis when the
    snapshot's input fails), ``note`` what the page says was taken from the call."""

    check: Check
    given: Given
    own_input: Check | None = None
    note: str = ""
    also: tuple[Check, ...] = ()  # checks the call makes possible besides (an attention module's inputs)
    # the catalogue tensors no snapshot shows that the call's own input stood in for: (record name, the input)
    stood_in: tuple[tuple[str, torch.Tensor], ...] = ()
    # the catalogue's names the binding gave what the line's calls stood in for, and the student's words for them:
    # ("blocks.0.attn.proj", "the Linear your line called"), said so in the diagnosis (bound_run.py in_callers_terms)
    said: tuple[tuple[str, str], ...] = ()

    @cached_property
    def source(self) -> TensorDict:
        """The page's view of the run with what the call gave: what the bound check reads."""
        given = self.given
        return given.base.with_tensors(given.tensors, modules=dict(given.modules), params=dict(given.params))
