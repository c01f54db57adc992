"""The declared parts of a report (``transformer_trace.catalogue.Report``) beside its catalogue, and their checks.

A report is one object: what it needs is a required attribute, what it may add an optional one that is None when it
has none. As torchvision's ``WeightsEnum.verify`` and mkdocstrings' ``BaseHandler`` (its declared ``collect`` /
``render``, checked when the handler is loaded) do, every part is checked when the report is made: a missing,
misnamed or mistyped part is a ``ReportError`` naming the report and the part, never a feature silently absent.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any, Literal, NamedTuple, get_args


class ReportError(TypeError):
    """A report declared wrongly: a part missing, misnamed, or not of its kind. A bug in the report, not user input."""


TraceInputKind = Literal["ids", "values", "vocabulary", "classes"]
_TRACE_INPUT_KINDS = get_args(TraceInputKind)


class TraceInput(NamedTuple):
    """A run input a trace labels from the user's own tensors: ``kind`` "ids" or "values" (each ID snapshot ``where``
    captured, as "ID n" or n), or "vocabulary" or "classes" ("ID k" / "class k" for k below dimension ``where``)."""

    kind: TraceInputKind
    where: int | str  # a snapshot number (ids, values) or a dimension's name (vocabulary, classes)


@dataclass(frozen=True)
class TraceSpec:
    """How `python -m transformer_trace trace` reads a script marked with a report's numbering
    (generator/reports/<report>/trace.py declares ``TRACE``).

    ``keyword`` and ``letter`` are how students mark its snapshots: ``# BREAKPOINT S13`` (keyword "BREAKPOINT", letter
    "S") or ``# Snapshot #13`` (keyword "SNAPSHOT", letter "#"). ``inputs`` are the run inputs a trace stands in for
    with labels read from the user's tensors (a trace knows the user's token IDs, not their words): input name ->
    TraceInput. The placeholders that name one pass of the layer loop are the report's options'
    (``RunOptions.NAMED_PASSES``); what a trace verifies is the catalogue's checks, run on the captured tensors.
    """

    keyword: str
    letter: str
    example_size: tuple[str, ...] = ()  # `build` flags that give the bundled report the size of examples/ (benchmarks)
    inputs: Mapping[str, TraceInput] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, declared in self.inputs.items():
            if not (isinstance(declared, tuple) and len(declared) == 2):
                raise ReportError(f"trace input {name!r}: expected (kind, snapshot number or dimension), "
                                  f"got {declared!r}")
        object.__setattr__(self, "inputs", MappingProxyType({name: TraceInput(*declared)
                                                             for name, declared in self.inputs.items()}))

    def marker(self, number: int, label: str) -> str:
        """How to mark snapshot ``number`` (``label`` is the report's own, e.g. "S13" or "#13")."""
        return f"# {self.keyword.capitalize() if self.letter == '#' else self.keyword} {label}"


@dataclass(frozen=True)
class Training:
    """How a report's model is trained (`python -m transformer_trace train <report>`): ``main(steps, out, seed, quiet)``
    trains it and writes a checkpoint and its record; ``checkpoint`` is the bundled one, ``load_record(checkpoint)`` its
    record (or None), ``record_path(checkpoint)`` where a checkpoint's record is written."""

    main: Callable[..., Any]
    checkpoint: Path
    load_record: Callable[[Path], dict | None]
    record_path: Callable[[Path], Path]


@dataclass(frozen=True)
class Benchmark:
    """What benchmarks/run.py measures of a report: ``model_tables(report, device, repeats, interleaved)`` its timing
    tables on a device, ``targets(tables)`` the speed targets they meet or miss."""

    model_tables: Callable[..., list]
    targets: Callable[[list], list]


def _takes(function: Any, *args: Any, **kwargs: Any) -> bool:
    """Whether ``function`` is callable with these arguments (by its signature; it is not called)."""
    if not callable(function):
        return False
    try:
        inspect.signature(function).bind(*args, **kwargs)
    except TypeError:
        return False
    except ValueError:  # a builtin without a signature: take it on trust
        return True
    return True


# part -> (whether the value is right, what it must be); a None optional part means "the report has none"
_PARTS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "runner": (lambda v: v is None or _takes(v, "report", "opts"),
               "a callable run(report, opts) that returns the ModelRun (None: no model of ours runs the report)"),
    "starter": (lambda v: v is None or _takes(v, "report", "opts"),
                "None or a callable start(report, opts) that returns a function waiting for the work begun"),
    "templates": (lambda v: v is None or (isinstance(v, Path) and v.is_dir()),
                  "None or the Path of an existing folder"),
    "trace": (lambda v: v is None or (isinstance(v, TraceSpec) and all(
                  isinstance(name, str) and t.kind in _TRACE_INPUT_KINDS for name, t in v.inputs.items())),
              "None or a transformer_trace.report_parts.TraceSpec whose inputs are name -> TraceInput(kind, where)"),
    "training": (lambda v: v is None or (isinstance(v, Training) and _takes(v.main, 1, None, seed=0, quiet=True)
                                         and all(callable(f) for f in (v.load_record, v.record_path))),
                 "None or a Training whose main is a callable main(steps, out, seed, quiet)"),
    "benchmark": (lambda v: v is None or (isinstance(v, Benchmark) and _takes(v.targets, [])
                                          and _takes(v.model_tables, "report", "device", 1, "interleaved")),
                  "None or a Benchmark of model_tables(report, device, repeats, interleaved) and targets(tables)"),
}


def check_parts(key: str, parts: Mapping[str, Any]) -> None:
    """Raise a ReportError naming the first part of report ``key`` that is not what it must be."""
    for name, (right, what) in _PARTS.items():
        if name in parts and not right(parts[name]):
            raise ReportError(f"report {key!r}: {name} must be {what}, got {parts[name]!r}")


def check_names(key: str, given: set[str], known: set[str], required: set[str]) -> None:
    """Refuse a part name the report does not have (a misspelling: say which part it is close to) or a required
    part left out."""
    for name in sorted(given - known):
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; the parts are: {', '.join(sorted(known))}"
        raise ReportError(f"report {key!r}: no part named {name!r}{hint}")
    if missing := sorted(required - given):
        parts = f"part{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        raise ReportError(f"report {key!r}: required {parts} missing")


# The catalogue module's names (generator/reports/<report>/catalogue.py) -> the report's attribute; None: optional
CATALOGUE_NAMES = {"STAGES": "stages", "SNAPSHOTS": "snapshots", "FIGURES": "figures",
                   "OVERVIEW_FIGURES": "overview_figures", "DIMS_LEGEND": "dims_legend", "QUESTIONS": "questions",
                   "ALSO_RECORD": "also_record", "EXTRA_PAGES": "extra_pages"}
OPTIONAL_CATALOGUE_NAMES = {"ALSO_RECORD", "EXTRA_PAGES"}


def catalogue_parts(key: str, catalogue: ModuleType) -> dict[str, Any]:
    """The report attributes a catalogue module declares; a required name missing, or a public upper-case name that is
    none of the catalogue's (a misspelt ``ALSO_RECORDS`` would leave its tensors silently unrecorded), refused."""
    declared = {name for name, value in vars(catalogue).items()
                if name.isupper() and not name.startswith("_") and not isinstance(value, (type, ModuleType))}
    where = f"{catalogue.__name__}"
    for name in sorted(declared - set(CATALOGUE_NAMES)):
        close = difflib.get_close_matches(name, sorted(CATALOGUE_NAMES), n=1)
        hint = f"did you mean {close[0]}?" if close else f"a catalogue declares {', '.join(CATALOGUE_NAMES)}"
        raise ReportError(f"report {key!r}: {where}.{name} is no catalogue part; {hint} "
                          "(a private constant starts with _)")
    if missing := sorted(set(CATALOGUE_NAMES) - OPTIONAL_CATALOGUE_NAMES - declared):
        raise ReportError(f"report {key!r}: {where} has no {', '.join(missing)}")
    return {attribute: getattr(catalogue, name) for name, attribute in CATALOGUE_NAMES.items() if name in declared}
