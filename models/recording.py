"""A thin, explicit recording layer for forward passes.

Model code wraps the expression that computes a tensor:

    q = record(self, "q", self.W_q(x))        # (B, T, C)

With no recorder active, ``record`` returns its tensor after one attribute test,
so a plain forward pass pays nothing measurable. Inside ``recording(...)`` it
stores the tensor under a stable name (``<module path>.<name>``, e.g.
``encoder.layers.0.self_attn.q``) together with the file and line of the
statement that computed it. Recorded tensors are returned to the caller of
``recording``; nothing is ever left on a module.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

__all__ = ["Recorded", "Recording", "is_recording", "name_modules", "paused", "record", "recording"]


@dataclass(frozen=True)
class Recorded:
    """One captured tensor and where in the model source it was computed."""

    name: str
    tensor: torch.Tensor
    file: Path
    line: int


class Recording(dict[str, Recorded]):
    """Recorded tensors of one forward pass, keyed by name, in the order computed."""

    def tensor(self, name: str) -> torch.Tensor:
        try:
            return self[name].tensor
        except KeyError:
            known = ", ".join(sorted(self)) or "nothing"
            raise KeyError(f"no tensor recorded as {name!r}; recorded: {known}") from None


class _Active(threading.local):
    # Per thread, so a figure worker thread never sees another thread's recorder.
    recording: Recording | None = None
    keep: Callable[[str], bool] | None = None


_active = _Active()


def name_modules(model: nn.Module) -> None:
    """Give every submodule its dotted path, the prefix of the names it records."""
    for path, module in model.named_modules():
        module.record_path = path


def is_recording() -> bool:
    """True inside a ``recording(...)`` block (on this thread)."""
    return _active.recording is not None


def record(module: nn.Module, name: str, tensor: torch.Tensor) -> torch.Tensor:
    """Return ``tensor``; while recording, also keep it under ``<module path>.<name>``."""
    rec = _active.recording
    if rec is None:
        return tensor
    path = getattr(module, "record_path", "")
    full_name = f"{path}.{name}" if path else name
    if _active.keep is None or _active.keep(full_name):
        caller = sys._getframe(1)  # the model statement that computed the tensor
        rec[full_name] = Recorded(
            name=full_name,
            tensor=tensor.detach(),
            file=Path(caller.f_code.co_filename),
            line=caller.f_lineno,
        )
    return tensor


@contextmanager
def recording(keep: Iterable[str] | Callable[[str], bool] | None = None) -> Iterator[Recording]:
    """Record the forward passes run inside the block.

    ``keep`` bounds memory: a collection of names, or a predicate on a name; by
    default every recorded tensor is kept.
    """
    if _active.recording is not None:
        raise RuntimeError("recording() blocks cannot be nested")
    if keep is not None and not callable(keep):
        wanted = frozenset(keep)
        keep = wanted.__contains__
    rec = Recording()
    _active.recording, _active.keep = rec, keep
    try:
        yield rec
    finally:
        _active.recording, _active.keep = None, None


@contextmanager
def paused() -> Iterator[None]:
    """Run the forward passes inside the block unrecorded, even within a ``recording(...)`` block."""
    saved = _active.recording, _active.keep
    _active.recording, _active.keep = None, None
    try:
        yield
    finally:
        _active.recording, _active.keep = saved
