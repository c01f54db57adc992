"""What checks and figures read: typed references, and the tensor sources that resolve them.

A catalogue points at a recorded tensor with a ``Ref``: a record name at a place, such as
``Ref("{enc}.self_attn.q")``, whose placeholders (``{enc}``, ``{block}`` ...) are the traced
layer's paths (``RunOptions.places()``). A ``Ref`` names a record point; it does not hold it, so
the same catalogue row can be resolved against our models' recordings or against tensors captured
from someone else's code (issue 20: trace your own Transformer).

Checks and figures never see a model directly: they read a ``TensorSource``. Every source has
tensors (``t``, ``cpu``, ``has``); a model run also has modules, parameters and inputs. A source
without them raises ``NotCheckable`` naming what is missing, and the check reports itself as not
checkable rather than failed. ``TensorDict`` is the source for captured tensors alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import torch
from torch import nn

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.models.recording import Role

__all__ = ["Float64Copies", "InputRef", "Known", "Lacking", "MissingFact", "MissingTensor", "ModuleRef", "NoInput",
           "NotCheckable", "NoWeights", "ParamRef", "Ref", "TensorDict", "TensorSource", "fill", "on_cpu"]


def fill(template: str, places: Mapping[str, str]) -> str:
    """``template`` with its placeholders filled from ``places`` (the one place they are filled)."""
    try:
        return template.format_map(places)
    except KeyError as exc:
        known = ", ".join(sorted(places)) or "none"
        raise KeyError(f"{template!r}: no value for the placeholder {exc.args[0]!r}; known: {known}") from None


@dataclass(frozen=True)
class _Placed:
    """A name in the model with placeholders for the traced layer (the shared part of Ref, ModuleRef and ParamRef).
    ``roles``: what the tensor or module is, as its declarations say (the point's and its place's ``Role``, set where a
    catalogue's ``Place`` builds it); a reader finds what it needs by them, never by the name. Not part of its
    identity: a reference is equal to one of the same name."""

    template: str
    roles: frozenset[Role] = field(default=frozenset(), compare=False, repr=False)

    def name(self, places: Mapping[str, str]) -> str:
        return fill(self.template, places)

    def __str__(self) -> str:
        return self.template


@dataclass(frozen=True)
class Ref(_Placed):
    """A recorded tensor: a record name at a place, e.g. ``Ref("{enc}.self_attn.q")`` or ``Ref("logits")``.

    The name is ``<module path>.<point name>`` as ``transformer_trace.models.recording.record`` stores it; placeholders
    stand for the traced layer. ``Ref.at("{enc}.self_attn", MultiHeadAttention.Q)`` builds one from a
    declared point.
    """

    @classmethod
    def at(cls, place: str, point: Any, roles: frozenset[Role] = frozenset()) -> Ref:
        """The reference to ``point`` (a ``transformer_trace.models.recording.Point``) on the module at ``place``, with
        the point's role and ``roles`` (its place's)."""
        return cls(point.full_name(place), roles | ({point.role} if point.role is not None else set()))


@dataclass(frozen=True)
class ModuleRef(_Placed):
    """A module of the model at a place, e.g. ``ModuleRef("{enc}.self_attn.W_q")``: only a model run has it."""


@dataclass(frozen=True)
class ParamRef(_Placed):
    """A parameter of the model, e.g. ``ParamRef("src_emb.weight")``: only a model run has it."""


@dataclass(frozen=True)
class InputRef:
    """A fact of the run's input, e.g. ``InputRef("src")`` (the source sentence): what the run was fed."""

    key: str

    def __str__(self) -> str:
        return self.key


class NotCheckable(Exception):
    """The source lacks what a check needs (a tensor, the model's weights, an input); ``missing`` names it."""

    def __init__(self, missing: str, why: str = "") -> None:
        super().__init__(f"{missing}: {why}" if why else missing)
        self.missing = missing
        self.why = why

    @property
    def needed(self) -> str:
        """What a text or a figure needed, as its fallback says it: "input src (a trace captures ...)"."""
        return f"{self.missing} ({self.why})" if self.why else self.missing


class NoWeights(NotCheckable):
    """The source has no model: ``missing`` names the module or parameter (``module x``, ``parameter y``)."""


class NoInput(NotCheckable):
    """The source does not know a fact of the run's input: ``missing`` names it (``input src``)."""


class MissingTensor(NotCheckable, KeyError):
    """A tensor the source does not hold (also a KeyError, for callers that look tensors up)."""

    def __str__(self) -> str:
        return Exception.__str__(self)


class MissingFact(NotCheckable, KeyError):
    """A fact (an input, a dimension) a run does not know; also a KeyError, so a template's ``is defined`` works."""

    def __str__(self) -> str:
        return Exception.__str__(self)


class Lacking:
    """A collection that says why it lacks an entry (``lack``): a template that reads one gets that ``NotCheckable``
    (generator/render.py's Undefined), so the text that needed it falls back, naming what it needed."""

    def lack(self, key: Any) -> NotCheckable:
        raise NotImplementedError


class Known(dict, Lacking):
    """Facts a run knows (inputs, dimensions, the run stamp); a name it lacks is a ``MissingFact`` naming it: ``what``
    says what kind of fact it is, ``why`` why the run has none (a traced script's: it captures tensors, not facts)."""

    def __init__(self, values: Mapping[str, Any], what: str, why: str) -> None:
        super().__init__(values)
        self.what, self.why = what, why

    def lack(self, key: Any) -> NotCheckable:
        return MissingFact(f"{self.what} {key}", self.why)

    def __missing__(self, key: str) -> Any:
        raise self.lack(key)


def on_cpu(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` on the CPU, out of any autograd graph: itself where it is so already (a captured tensor)."""
    return tensor if tensor.device.type == "cpu" and not tensor.requires_grad else tensor.detach().cpu()


class Float64Copies:
    """The float64 copy of each tensor a run's checks read (the tensor itself where it is float64 already), made the
    first time one asks and handed to every later one: a tensor is converted for the checks once, whichever check and
    whichever view of the run reads it (no check changes what it is given)."""

    def __init__(self) -> None:
        self._copies: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # id -> (the tensor, kept alive; its copy)

    def of(self, tensor: torch.Tensor) -> torch.Tensor:
        kept = self._copies.get(id(tensor))
        if kept is None:
            kept = self._copies[id(tensor)] = (tensor, on_cpu(tensor).double())
        return kept[1]


@runtime_checkable
class TensorSource(Protocol):
    """What a check or a figure reads. ``ModelRun`` is one; ``TensorDict`` (tensors alone) another."""

    def name(self, ref: Ref | ModuleRef | ParamRef | str) -> str:
        """The record name ``ref`` stands for in this source (placeholders filled)."""

    def has(self, ref: Ref | str) -> bool:
        """Whether the source holds the tensor."""

    def cpu(self, ref: Ref | str) -> torch.Tensor:
        """The tensor on the CPU in its own dtype; MissingTensor (a KeyError) when absent."""

    def t(self, ref: Ref | str) -> torch.Tensor:
        """The tensor in float64 on the CPU, for checks."""

    def module(self, ref: ModuleRef | str) -> nn.Module:
        """The model's module; raises NotCheckable without a model."""

    def parameter(self, ref: ParamRef | str) -> torch.Tensor:
        """A parameter in float64 on the CPU; raises NotCheckable without a model."""

    def input(self, ref: InputRef | str) -> Any:
        """A fact of the run's input; raises NotCheckable when the source does not know it."""


@dataclass
class TensorDict:
    """A tensor source from captured tensors (e.g. a student's script): no model, maybe some inputs, and the weights
    known of it.

    ``tensors`` maps record names to tensors; ``places`` fills placeholders; ``inputs`` holds whatever
    facts of the input are known; ``declared`` the record points' declarations where known (record name ->
    ``transformer_trace.models.recording.Declared``: named shapes for pages and axis labels). ``modules`` and ``params``
    are the modules and parameters known by the catalogue's names (a traced line's module calls rebuilt them:
    generator/trace/reading/weights.py), and ``run`` the run that answers for the others (a traced run's view of a
    page, trace/reading/run.py ``TracedRun.seen_from``); weight-based checks that need what none of them has are not
    checkable.
    """

    tensors: Mapping[str, torch.Tensor]
    places: Mapping[str, str] = field(default_factory=dict)
    inputs: Mapping[str, Any] = field(default_factory=dict)
    declared: Mapping[str, Any] = field(default_factory=dict)
    modules: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, torch.Tensor] = field(default_factory=dict)
    run: TensorSource | None = None
    # each tensor's float64 copy, made once for every view of the run (``with_tensors``): what ``t`` hands every check
    float64: Float64Copies = field(default_factory=Float64Copies, repr=False, compare=False)

    def with_tensors(self, tensors: Mapping[str, torch.Tensor], modules: Mapping[str, Any] | None = None,
                     params: Mapping[str, torch.Tensor] | None = None) -> TensorDict:
        """This source's view of the same run with ``tensors`` and the weights a module call gave (``modules``,
        ``params``): its own modules and parameters are not kept, its run and its float64 copies are."""
        return TensorDict(tensors, places=self.places, inputs=self.inputs, declared=self.declared,
                          modules=modules or {}, params=params or {}, run=self.run, float64=self.float64)

    def name(self, ref: Ref | ModuleRef | ParamRef | str) -> str:
        return fill(str(ref), self.places)

    def has(self, ref: Ref | str) -> bool:
        return self.name(ref) in self.tensors

    def _tensor(self, ref: Ref | str) -> torch.Tensor:
        name = self.name(ref)
        try:
            return self.tensors[name]
        except KeyError:
            captured = ", ".join(sorted(self.tensors)) or "nothing"
            raise MissingTensor(name, f"not captured; captured: {captured}") from None

    def cpu(self, ref: Ref | str) -> torch.Tensor:
        return on_cpu(self._tensor(ref))

    def t(self, ref: Ref | str) -> torch.Tensor:
        return self.float64.of(self._tensor(ref))

    def module(self, ref: ModuleRef | str) -> Any:
        name = self.name(ref)
        if name in self.modules:
            return self.modules[name]
        if self.run is not None:  # the run's names are filled at this view's pass already
            return self.run.module(name)
        raise NoWeights(f"module {name}", "the tensors were captured without the model's weights")

    def parameter(self, ref: ParamRef | str) -> torch.Tensor:
        name = self.name(ref)
        if name in self.params:
            return self.float64.of(self.params[name])
        if self.run is not None:
            return self.run.parameter(name)
        raise NoWeights(f"parameter {name}", "the tensors were captured without the model's weights")

    def input(self, ref: InputRef | str) -> Any:
        try:
            return self.inputs[str(ref)]
        except KeyError:
            raise NoInput(f"input {ref}", "the capture does not record it") from None
