"""The reports' command-line options as a table, so that `build` and `train` parse without PyTorch.

Each report's options are a dataclass (generator/reports/<report>/options.py) whose defaults come from its model's
configuration (models/, which imports PyTorch). The parser (generator/arguments.py) needs only what argparse shows and
checks: per flag its field name, which of options.PARSERS reads it, its choices, help and default text, and which
reports take it; and which reports can be trained. That is read from option_table.json beside this module, written
from the registry by ``table_of`` (`python scripts/write_option_table.py`; tests/test_option_table.py fails when the
file and the registry differ). `build --help` and every refusal made while parsing therefore import no PyTorch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import MISSING, Field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from transformer_trace.options import RunOptions, flag_of, option_kind

if TYPE_CHECKING:
    from transformer_trace.catalogue import Report

TABLE = Path(__file__).resolve().with_name("option_table.json")
COMMON = {f.name for f in fields(RunOptions)}  # every report's options: seed, device, layer


class Option(TypedDict):
    """One flag of `build`: what argparse is told about it."""

    flag: str
    dest: str  # the options field it sets
    kind: str | None  # which of options.PARSERS reads it
    choices: list[Any] | None
    help: str  # without the default, which ``default`` gives
    default: str  # the default as help shows it; for a flag several reports take, each report's
    owners: list[str]  # the reports that take it ([] for RunOptions' own: every report)


class OptionTable(TypedDict):
    reports: list[str]  # the registry's keys, in its order
    trainable: list[str]  # the reports with a training recipe (`train <key>`)
    options: list[Option]  # RunOptions' first, then each report's own in the registry's order


def _default_text(f: Field) -> str:
    default = f.default if f.default is not MISSING else None
    return "the bundled input" if default is None else str(default)


def _option(f: Field, owners: list[str], help_text: str, default: str) -> Option:
    choices = f.metadata.get("choices")
    return Option(flag=flag_of(f), dest=f.name, kind=option_kind(f), choices=None if choices is None else list(choices),
                  help=help_text, default=default, owners=owners)


def table_of(reports: Mapping[str, Report]) -> OptionTable:
    """The table of the registry ``reports``: RunOptions' fields, then each report's own init fields, a flag that
    several reports share once, with each report's own meaning (when they differ) and default."""
    options = [_option(f, [], f.metadata["help"], _default_text(f)) for f in fields(RunOptions)]
    taking: dict[str, dict[str, Field]] = {}  # flag -> report -> its field (a flag several reports take, added once)
    for key, report in reports.items():
        for f in fields(report.run_options):
            if f.name not in COMMON and f.init:
                taking.setdefault(flag_of(f), {})[key] = f
    for owners in taking.values():
        first = next(iter(owners.values()))
        helps = {f.metadata["help"] for f in owners.values()}
        help_text = (helps.pop() if len(helps) == 1
                     else "; ".join(f"{key}: {f.metadata['help']}" for key, f in owners.items()))
        default = ", ".join(f"{_default_text(f)} for {key}" for key, f in owners.items()) if len(owners) > 1 \
            else _default_text(first)
        options.append(_option(first, list(owners), help_text, default))
    return OptionTable(reports=list(reports), options=options,
                       trainable=[key for key, report in reports.items() if report.training is not None])


def read_table() -> OptionTable:
    table: OptionTable = json.loads(TABLE.read_text(encoding="utf-8"))
    return table
