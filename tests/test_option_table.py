"""`build` and `train` parse their flags from the option table (generator/option_table.py), written from the
registry's option dataclasses: the table is the registry's own, and the parser made from it takes every report's
options as the dataclasses declare them."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field, fields

import pytest

from transformer_trace.arguments import build_request, parser
from transformer_trace.option_table import read_table, table_of
from transformer_trace.options import PARSERS, RunOptions, flag_of, option_kind
from transformer_trace.reports import REPORTS

BUILDABLE = {key: report for key, report in REPORTS.items() if report.options is not None}


def subcommand(name: str) -> argparse.ArgumentParser:
    commands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices[name]


def test_the_table_is_the_registrys_own():
    assert read_table() == table_of(REPORTS), "a report's options changed: run python scripts/write_option_table.py"


def test_a_changed_default_changes_the_table():
    """The comparison above can fail: a report whose option has another default makes another table."""
    vit = REPORTS["vit"]
    size_field = next(f for f in fields(vit.run_options) if f.name == "size")

    @dataclass(frozen=True)
    class SmallerVit(vit.run_options):
        size: str = field(default="tiny", metadata=size_field.metadata)

    changed = {**REPORTS, "vit": dataclasses.replace(vit, options=SmallerVit)}
    assert table_of(changed) != table_of(REPORTS)
    (vit_size,) = [option for option in table_of(changed)["options"] if option["flag"] == "--vit-size"]
    assert vit_size["default"] == "tiny"


@pytest.mark.parametrize("key", list(BUILDABLE))
def test_every_option_of_a_report_is_a_build_flag_with_its_field_name_parser_choices_and_default(key):
    """A flag several reports take is parsed as the first of them (in the registry's order) declares it; the others'
    own choices are checked when the build reads the value (options.option_value)."""
    actions = {flag: action for action in subcommand("build")._actions for flag in action.option_strings}
    for f in fields(BUILDABLE[key].run_options):
        if not f.init:
            continue
        action = actions[flag_of(f)]
        first = next(g for report in BUILDABLE.values() for g in fields(report.run_options) if flag_of(g) == flag_of(f))
        assert action.dest == f.name and action.type is PARSERS[option_kind(first)]
        assert action.choices == (list(first.metadata["choices"]) if first.metadata.get("choices") else None)
        default = f.default if f.default is not dataclasses.MISSING and f.default is not None else "the bundled input"
        assert f"{default} for {key}" in action.help or f"(default: {default})" in action.help


def test_the_reports_options_own_groups_name_the_reports_that_take_them():
    groups = {group.title: {a.dest for a in group._group_actions} for group in subcommand("build")._action_groups}
    common = {f.name for f in fields(RunOptions)}
    for key, report in BUILDABLE.items():
        own = {f.name for f in fields(report.run_options) if f.init} - common
        assert own == set().union(*(dests for title, dests in groups.items() if key in title.split(" and ")))


def test_train_offers_the_reports_with_a_training_recipe():
    (model,) = [a for a in subcommand("train")._actions if a.dest == "model"]
    assert model.choices == [key for key, report in REPORTS.items() if report.training is not None] != []


def test_every_flag_given_reaches_the_build_request_by_its_field_name():
    argv = ["build", "--model", "gpt", "--seed", "3", "--layers", "1", "--prompt", "hi", "--weights", "random"]
    assert dict(build_request(parser().parse_args(argv)).given) == {"seed": 3, "layers": 1, "prompt": "hi",
                                                                    "weights": "random"}
