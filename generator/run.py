"""Run a model once with recording on, and hold what the report needs of that run."""

from __future__ import annotations

import functools
import importlib.metadata
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from transformer_trace.errors import UserError
from transformer_trace.indexing import parse_index
from transformer_trace.sources import (Float64Copies, InputRef, MissingTensor, ModuleRef, NoInput, NotCheckable,
                                       NoWeights, ParamRef, Ref, fill)
from transformer_trace.tensors import TensorView
from transformer_trace.version import package_version  # the run stamp names the package version
from transformer_trace.models.recording import Declared, Recording, declared_points

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def resolve_device(requested: str) -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda was asked for, but PyTorch sees no CUDA GPU here; "
                        "use --device cpu or --device auto")
    if requested not in ("cpu", "cuda"):
        raise UserError(f"unknown device {requested!r}; choose auto, cpu or cuda")
    return torch.device(requested)


@dataclass(frozen=True)
class Lacks:
    """What a run does not have, and why, as the typed exceptions that say so (generator/sources.py): the model's
    weights (``NoWeights``), facts of its input (``NoInput``), recorded tensors (``MissingTensor``: ``tensors`` gives
    the reason for a record name whose absence has its own, e.g. a snapshot not marked in a traced script)."""

    weights: str = ""  # why the run has no model ("" when it has one)
    inputs: str = "this run does not have it"
    unrecorded: str = "not recorded in this run (the runner keeps only what the report reads)"
    tensors: dict[str, MissingTensor] = field(default_factory=dict)

    def tensor(self, name: str) -> MissingTensor:
        return self.tensors.get(name) or MissingTensor(name, self.unrecorded)


@dataclass
class ModelRun:
    """One recorded forward pass: tensors (moved to the CPU), the model, its inputs and sizes.

    The ``TensorSource`` (generator/sources.py) the pages, checks and figures read: our own models' runs, with every
    tensor recorded and the modules, parameters and inputs; and a traced script's (trace/reading/run.py), its captured
    tensors under the catalogue's record names and in its layouts, no model (``model`` None), and ``lacks`` saying
    why each thing it does not have is missing. Methods take a ``Ref`` (or the record-name template it holds) and fill
    its placeholders from ``places``.
    """

    report: Report = field(repr=False)  # the report whose run this is: its catalogue, templates, exploration
    model: nn.Module | None
    recording: Recording
    inputs: dict[str, Any]  # sentences, vocabularies, image facts: everything a page may cite
    dims: dict[str, int]  # named dimensions, e.g. {"B": 1, "S": 6, ...}
    places: dict[str, str]  # placeholders in record names, e.g. {"enc": "encoder.layers.0"}
    seed: int | None  # None: a traced script that never called torch.manual_seed
    device: str
    weights: str = "random"
    options: Any = None  # the RunOptions the run was made with (set by Report.run)
    lacks: Lacks = field(default_factory=Lacks)
    facts: dict[str, Any] | None = None  # the run stamp where it is given, not read from the model (a traced script's)
    record_points: dict[str, Declared] | None = None  # the declared record points, where no model declares them
    command: str = ""  # the command that made the run, where it is not a build of the report's options (a trace's)
    _cpu: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)
    # each tensor's float64 copy for the checks, made once (a traced run shares its views' own: trace/reading/run.py)
    float64: Float64Copies = field(default_factory=Float64Copies, repr=False, compare=False)
    # Work the run left to finish (a measurement begun ahead, still running in a thread: the GPT's held-out score);
    # see finish()
    unfinished: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def finish(self) -> ModelRun:
        """Complete what the run left to finish (Report.run does; the build, before this run's pages); the run."""
        while self.unfinished:
            self.unfinished.pop(0)()
        return self

    # ------------------------------------------------------------------ names

    def name(self, template: Ref | ModuleRef | ParamRef | str) -> str:
        return fill(str(template), self.places)

    @functools.cached_property
    def declared(self) -> dict[str, Declared]:
        """The model's declared record points: full record name -> point and named shape."""
        if self.record_points is not None:
            return self.record_points
        return declared_points(self._model("the model's declared record points"))

    # ------------------------------------------------------------------ tensors

    def has(self, template: Ref | str) -> bool:
        return self.name(template) in self.recording

    def input(self, key: InputRef | str) -> Any:
        try:
            return self.inputs[str(key)]
        except KeyError:
            raise NoInput(f"input {key}", self.lacks.inputs) from None

    def cpu(self, template: Ref | str) -> torch.Tensor:
        """The captured tensor, on the CPU, in its own dtype."""
        name = self.name(template)
        if name not in self._cpu:
            if name not in self.recording:
                raise self.lacks.tensor(name)
            self._cpu[name] = self.recording.tensor(name).cpu()
        return self._cpu[name]

    def t(self, template: Ref | str) -> torch.Tensor:
        """The captured tensor in float64 on the CPU, for checks (converted once: ``float64``)."""
        return self.float64.of(self.cpu(template))

    def view(self, template: Ref | str, index: str | None = None) -> torch.Tensor:
        tensor = self.cpu(template)
        return tensor[parse_index(index)] if index else tensor

    def tensor_view(self, template: Ref | str, index: str | None = None) -> TensorView:
        return TensorView(self.name(template), self.view(template, index))

    def source(self, template: Ref | str) -> tuple[str, int]:
        """The file and line that computed the tensor (a traced script's: the user's file and marked line)."""
        name = self.name(template)
        if name not in self.recording:
            raise self.lacks.tensor(name)
        entry = self.recording[name]
        return str(entry.file), entry.line

    def _model(self, what: str) -> nn.Module:
        if self.model is None:
            raise NoWeights(what, self.lacks.weights)
        return self.model

    def module(self, template: ModuleRef | str) -> nn.Module:
        return self._model(f"module {self.name(template)}").get_submodule(self.name(template))

    def parameter(self, template: ParamRef | str) -> torch.Tensor:
        name = self.name(template)
        return self.float64.of(self._model(f"parameter {name}").get_parameter(name))

    # ------------------------------------------------------------------ facts

    def stamp(self) -> dict[str, Any]:
        if self.facts is not None:
            return self.facts
        return {
            "seed": self.seed,
            "device": self.device,
            "device_name": (torch.cuda.get_device_name(0) if self.device == "cuda"
                            else platform.processor() or platform.machine()),
            "dtype": str(next(self._model("the model's dtype").parameters()).dtype).removeprefix("torch."),
            "torch": torch.__version__,
            "torchvision": _version("torchvision"),
            "python": platform.python_version(),
            "weights": self.weights,
            "package": package_version(),  # the run stamp's transformer-trace row
        }

    def parameter_counts(self) -> list[tuple[str, int]]:
        """Parameters per top-level component, in definition order; a shared (tied) parameter counts once, where it
        first appears."""
        counts: list[tuple[str, int]] = []
        seen: set[int] = set()
        model = self._model("the model's parameters")
        for name, child in model.named_children():
            fresh = [p for p in child.parameters() if id(p) not in seen]
            seen.update(id(p) for p in fresh)
            n = sum(p.numel() for p in fresh)
            if n:
                counts.append((name, n))
        own = sum(p.numel() for p in model.parameters(recurse=False))
        if own:
            counts.append(("(model)", own))
        return counts
