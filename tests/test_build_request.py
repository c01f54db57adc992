"""A build request is one typed, frozen object (generator/build_request.py) whichever face made it: the command line
from argv, the MkDocs plugin from mkdocs.yml, the warm server from a request's fields. The same values mean the same
request, and a bad one is refused in the same one line by all three."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from transformer_trace.arguments import build_request as from_argv, parser
from transformer_trace.build_request import BuildRequest, config_key, declared_options, report_options
from transformer_trace.cli import main
from transformer_trace.errors import UserError
from transformer_trace.reports import REPORTS
from transformer_trace.site.api import ApiError, build_request as from_fields
from transformer_trace.site.forms import SiteForms

FORMS = SiteForms.of(REPORTS)
CONFIG = Path("mkdocs.yml")


def cli_line(argv: list[str], capsys) -> str:
    """The one line the command line prints for ``argv``, without its "error: "."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: ") and "\n" not in line
    return line.removeprefix("error: ")


BAD = [
    ("encoder-decoder", "seed", "--seed", "abc"),
    ("encoder-decoder", "seed", "--seed", str(2**63)),
    ("encoder-decoder", "device", "--device", "tpu"),
    ("encoder-decoder", "layer", "--layer", "0"),
    ("vit", "vit_size", "--vit-size", "huge"),
    ("gpt", "prompt", "--prompt", "lone \udfff surrogate"),
]


@pytest.mark.parametrize("model, name, flag, value", BAD, ids=[f"{b[2]}={b[3][:8]}" for b in BAD])
def test_a_bad_value_is_refused_in_the_same_line_by_the_cli_the_server_and_the_plugin(
        tmp_path, capsys, model, name, flag, value):
    line = cli_line(["build", "--model", model, f"{flag}={value}", "--out", str(tmp_path)], capsys)
    with pytest.raises(ApiError) as refused:
        from_fields({"model": model, name: value}, tmp_path, forms=FORMS)
    assert (refused.value.status, refused.value.message) == (400, line)
    with pytest.raises(UserError) as declared:
        declared_options(model, {name: value}, CONFIG, REPORTS)
    problem = line.removeprefix(f"argument {flag}: ").removesuffix(" (see --help)")
    assert str(declared.value) == f"{config_key(CONFIG, model)}.{name}: {problem}"


def test_an_unknown_report_is_refused_in_the_same_line_by_the_cli_and_the_server(tmp_path, capsys):
    line = cli_line(["build", "--model", "gpt-9", "--out", str(tmp_path)], capsys)
    with pytest.raises(ApiError) as refused:
        from_fields({"model": "gpt-9"}, tmp_path, forms=FORMS)
    assert refused.value.message == line and line.startswith("argument --model: invalid choice: 'gpt-9'")


@pytest.mark.parametrize("model, values", [
    ("encoder-decoder", {"seed": "3", "layer": "2", "src": "the cat", "device": "cpu"}),
    ("vit", {"vit_size": "tiny", "seed": "11"}),
    ("gpt", {"prompt": "hello", "layer": "1"}),
])
def test_the_same_values_make_the_same_request_and_options_whichever_face_reads_them(tmp_path, model, values):
    flags = {name: dataclasses.fields(REPORTS[model].run_options) for name in values}
    argv = ["build", "--model", model, "--out", str(tmp_path), "-q"]
    for name, value in values.items():
        argv.append(f"--{name.replace('_', '-')}={value}")
    by_cli = from_argv(parser().parse_args(argv))
    by_server = from_fields({"model": model, **values}, tmp_path, forms=FORMS)
    assert by_cli == dataclasses.replace(by_server, config=None)
    assert len(by_cli.given) == len(flags) and not any(isinstance(v, str) and v.isdigit() for v in by_cli.given.values())
    by_plugin = report_options(BuildRequest(model=model), REPORTS, {model: values}, CONFIG)
    assert report_options(by_cli, REPORTS) == by_plugin


def test_a_build_request_is_frozen_and_its_values_read_only():
    request = BuildRequest(model="gpt", given={"seed": 3})
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.model = "vit"  # type: ignore[misc]
    with pytest.raises(TypeError):
        request.given["seed"] = 4  # type: ignore[index]
