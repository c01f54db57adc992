"""A thin, explicit recording layer for forward passes.

A model file declares each tensor it records once, as a ``Point`` beside the module that
computes it (TransformerLens declares its hook points the same way), and wraps the
expression that computes it:

    class MultiHeadAttention(nn.Module):
        Q = Point("q", ("B", "Lq", "C"), "queries x_q·W_qᵀ + b, before the split into heads")
        ...
        q = record(self, self.Q, self.W_q(x_q))  # (B, Lq, C)

With no recorder active, ``record`` returns its tensor after one attribute test,
so a plain forward pass pays nothing measurable. Inside ``recording(...)`` it
stores the tensor under a stable name (``<module path>.<point name>``, e.g.
``encoder.layers.0.self_attn.q``) together with the file and line of the
statement that computed it. Recorded tensors are returned to the caller of
``recording``; nothing is ever left on a module.

``declared_points(model)`` lists every record point of a model, full name -> ``Declared``
(the point and its shape for that module), by walking ``named_modules`` (a model built
on the meta device costs nothing), so catalogues, pages and tests read one declaration.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import torch
from torch import nn

__all__ = ["Declared", "Point", "Recorded", "Recording", "Role", "declared_points", "is_recording", "name_modules",
           "paused", "record", "recording"]


NamedShape = tuple[str,
                   ...]  # one symbol of the model file's shape legend per axis: "B", "3·C", "Ch·P·P", or a literal "1"


class Role(Enum):
    """What a recorded tensor is in the model's flow, for the readers that must find one by what it is (a trace's
    reading: the cross-attention's keys, the encoder's output), never by its record name. A point declares what it is
    in its module (``Point.role``); a catalogue's ``Place`` what the module at that place is (a cross-attention, the
    encoder's layer); a ``Ref`` built there carries both (``Ref.roles``)."""

    QUERIES = "an attention's query projection"
    KEYS = "an attention's key projection"
    VALUES = "an attention's value projection"
    QUERIES_KEYS_VALUES = "an attention's queries, keys and values side by side: one fused projection"
    LAYER_OUTPUT = "a layer's output, what the next layer reads"
    RESIDUAL_SUM = "a residual sum: a layer's stream plus a sublayer's output"
    ATTENTION_WEIGHTS = "an attention's weights: softmax rows over the keys"
    MASK = "the mask that says which keys a query may see"
    ENCODER = "the encoder's layer"
    LAST_LAYER = "the last layer of the stack (what the final norm or the head reads)"
    CROSS_ATTENTION = "a cross-attention: its keys and values come from the encoder's output"


@dataclass(frozen=True)
class Point:
    """A tensor a module records, declared once, beside the module that computes it.

    ``name`` is the last part of the record name (the module's path goes in front); ``shape`` names
    each axis with a symbol of the model file's shape legend: a symbol, a product of symbols
    ("3·C") or a literal size ("1"). A module that serves in several places (the encoder–decoder's
    attention, both as self- and cross-attention) writes its own axis symbols ("Lq", "Lk") and
    binds them per instance in ``record_axes`` (``{"Lq": "T", "Lk": "S"}``). ``doc`` says what the
    tensor is; ``note`` why it differs from the same concept in another model, where it does.
    ``scope`` prefixes the record name, for tensors a module computes outside its forward pass
    (the GPT's generation loop records ``generate.blocks.0.cache_k``). ``role``: what the tensor is in its module,
    where a reader needs to find it without its name (``Role``).
    """

    name: str
    shape: NamedShape
    doc: str
    note: str = ""
    scope: str = ""
    role: Role | None = None

    def __post_init__(self) -> None:
        if not self.name or any(ch in self.name for ch in "/{} "):
            raise ValueError(f"record point name {self.name!r} must be a non-empty name without '/', '{{', '}}' or "
                             "spaces")
        if not isinstance(self.shape, tuple) or not all(isinstance(axis, str) and axis for axis in self.shape):
            raise ValueError(f"record point {self.name!r}: shape must be a tuple of axis symbols, got {self.shape!r}")

    def full_name(self, path: str) -> str:
        """The record name of this point on the module at ``path`` ("" for the model itself)."""
        return ".".join(part for part in (self.scope, path, self.name) if part)


@dataclass(frozen=True)
class Declared:
    """A record point of one model: its full record name, the point, and its shape on that module."""

    name: str
    point: Point
    shape: NamedShape


def points_of(module_type: type) -> tuple[Point, ...]:
    """The points a module class declares (class attributes, base classes first), in declaration order."""
    points: dict[str, Point] = {}
    for cls in reversed(module_type.__mro__):
        for value in vars(cls).values():
            if isinstance(value, Point):
                points[value.full_name("")] = value
    return tuple(points.values())


def bind_shape(shape: NamedShape, axes: dict[str, str]) -> NamedShape:
    """``shape`` with a module's own axis symbols replaced by the model's ("Lq" -> "T"), products factor by factor."""
    if not axes:
        return shape
    return tuple("·".join(axes.get(factor, factor) for factor in axis.split("·")) for axis in shape)


def declared_points(model: nn.Module) -> dict[str, Declared]:
    """Every record point of ``model``: full record name -> ``Declared``, module by module in ``named_modules`` order.

    Shapes are bound to each module's ``record_axes``; a module's ``unrecorded`` names points that
    instance never records (the encoder's attention has no mask, so no masked scores). Nothing is run: build the
    model under
    ``torch.device("meta")`` to list the points of a configuration without allocating its weights.
    """
    declared: dict[str, Declared] = {}
    for path, module in model.named_modules():
        axes = getattr(module, "record_axes", {})
        unrecorded = getattr(module, "unrecorded", ())  # points this instance never records (names)
        for point in points_of(type(module)):
            if point.name in unrecorded:
                continue
            name = point.full_name(path)
            declared[name] = Declared(name=name, point=point, shape=bind_shape(point.shape, axes))
    return declared


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


def record(module: nn.Module, point: Point, tensor: torch.Tensor) -> torch.Tensor:
    """Return ``tensor``; while recording, also keep it under ``<module path>.<point name>``.

    ``point`` is one of the module's declared ``Point`` class attributes (``record(self, self.Q, q)``).
    """
    rec = _active.recording
    if rec is None:
        return tensor
    full_name = point.full_name(getattr(module, "record_path", ""))
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
