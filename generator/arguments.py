"""The command line's arguments: the parser of `python -m transformer_trace`.

The build command's options are the reports' option dataclasses' fields (generator/options.py and
generator/reports/<report>/options.py): one flag per field, with its type (options.PARSERS), choices and default. The
parser reads them from the option table (generator/option_table.py, written from the registry), not from the
dataclasses, whose defaults come from the models' configurations (PyTorch): `build --help`, `train --help` and every
refusal made while parsing start without PyTorch. Parsed, the flags become a ``BuildRequest``
(generator/build_request.py: what a build request means), the same typed object the MkDocs plugin and the warm server
make from mkdocs.yml and a request's fields.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from transformer_trace.build_request import ALL, BuildRequest
from transformer_trace.option_table import Option, OptionTable, read_table as read_option_table
from transformer_trace.options import PARSERS, bounded_int, out_path, refuse_a_missing_file, shown
from transformer_trace.version import package_version

MAX_STEPS = 100_000  # `train --steps`: about ten hours of the GPT's recipe on two CPU cores (0.35 s a step)


def program_name() -> str:
    """How the user started the command, for help and messages: the console script, or `python -m transformer_trace`."""
    return "transformer-trace" if Path(sys.argv[0]).name == "transformer-trace" else "python -m transformer_trace"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line and exit code 2, like every other input error (OptionRefused)
        self.exit(2, f"error: {message} (see --help)\n")


def _add_option(group: argparse._ActionsContainer, option: Option) -> None:
    group.add_argument(
        option["flag"], dest=option["dest"], default=None, type=PARSERS[option["kind"]], choices=option["choices"],
        metavar=None if option["choices"] else option["dest"].upper(),
        help=f"{option['help']} (default: {option['default']})",
    )


def _add_pdf_parser(sub: argparse._SubParsersAction) -> None:
    pdf = sub.add_parser("pdf", help="build the site and print each report to docs/pdf/<report>.pdf",
                         description="Build the site with MkDocs, print every generated report's print view to PDF "
                         "through a headless Chromium, and link the PDFs from the landing page.")
    pdf.add_argument("--out", type=out_path, default=None,
                     help="docs folder holding the generated reports (default: the docs_dir of --config)")
    pdf.add_argument("--config", type=Path, default=None, help="mkdocs.yml to build with (default: ./mkdocs.yml)")
    pdf.add_argument("-q", "--quiet", action="store_true")
    pdf.add_argument("-v", "--verbose", action="store_true")


def _add_train_parser(sub: argparse._SubParsersAction, table: OptionTable) -> None:
    train = sub.add_parser("train",
                           help="train a report's model on its bundled corpus and write a checkpoint and its record",
                           description="Train a report's default-size model on its bundled corpus (the byte GPT: "
                           "CPython's pydoc topics, PSF licence) on the CPU, deterministically: the same seed gives "
                           "the same loss curve. Writes the state dict and a training record (PATH with .json: corpus "
                           "sha256, schedule, loss curve, held-out bits per byte, seconds).")
    train.add_argument("model", choices=table["trainable"],
                       help="which report's model to train (the reports with a training recipe)")
    train.add_argument("--steps", type=_steps, default=None, metavar="N", help=f"optimiser steps, 1 to {MAX_STEPS:,} "
                       "(default: the recipe's, see generator/reports/<report>/training.py)")
    train.add_argument("--seed", type=PARSERS["seed"], default=None,
                       help="seed of the initial weights and the batches (default: the recipe's)")
    train.add_argument("--out", type=out_path, default=None,
                       help="checkpoint file to write (default: the report's bundled checkpoint in its assets/)")
    train.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    train.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")


def _add_new_parser(sub: argparse._SubParsersAction) -> None:
    new = sub.add_parser("new", help="start a MkDocs site with one report in a new folder (as `mkdocs new`)",
                         description="Write DIR/mkdocs.yml (Material, search and the transformer-trace plugin with the "
                         "toy ViT report) and DIR/docs/index.md; then `cd DIR && mkdocs serve` generates the report "
                         "and serves the site. DIR must be new or empty.")
    from transformer_trace.new_command import folder_argument  # torch-free: refuses a name no site could carry

    new.add_argument("folder", type=folder_argument, metavar="DIR", help="the folder to create")
    new.add_argument("-q", "--quiet", action="store_true", help="no summary")
    new.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")


def parser() -> argparse.ArgumentParser:
    """The command line's parser. The reports' options come from the option table, the traceable reports from the
    snapshot table (both written from the registry): no command imports PyTorch to parse its arguments."""
    p = _Parser(prog=program_name(),
                description="Generate the traced-Transformer report site from real forward passes.")
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    options = read_option_table()
    _add_build_parser(sub, options)
    _add_pdf_parser(sub)
    _add_train_parser(sub, options)
    _add_serve_parser(sub)
    _add_new_parser(sub)
    from transformer_trace.trace import add_parser as add_trace_parser

    from transformer_trace.snapshot_table import add_parser as add_list_parser, read_table

    table = read_table()
    add_trace_parser(sub, None, list(table))
    from transformer_trace.classroom import add_parser as add_class_parser

    add_class_parser(sub)
    add_list_parser(sub, table)
    return p


def _add_build_parser(sub: argparse._SubParsersAction, table: OptionTable) -> None:
    keys = ", ".join(table["reports"])
    b = sub.add_parser(
        "build",
        help="run the models and write the report pages into docs/",
        description="Run the model(s) once with recording on and write one page per snapshot, figures, "
        "guiding-question answers and snapshots.json into the docs folder. The previous output is "
        "replaced only when everything succeeded.",
        epilog="examples:\n"
        "  python -m transformer_trace build\n"
        "  python -m transformer_trace build --model encoder-decoder --src \"the cat sat\" --tgt \"le chat\"\n"
        "  python -m transformer_trace build --model vit --image photo.jpg --weights imagenet\n"
        "then: mkdocs serve",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    b.add_argument("--model", choices=(ALL, *table["reports"]), default=ALL,
                   help=f"which report to (re)generate: {keys} or all (default: all)")
    for option in table["options"]:  # RunOptions' own: every report's
        if not option["owners"]:
            _add_option(b, option)
    b.add_argument("--out", type=out_path, default=None,
                   help="docs folder to write into (default: the docs_dir of --config)")
    b.add_argument("--config", type=Path, default=None,
                   help="mkdocs.yml whose transformer-trace plugin declares the reports and "
                   "their options: they are this command's defaults, flags override them (default: ./mkdocs.yml)")
    groups: dict[str, argparse._ArgumentGroup] = {}  # one per set of reports taking a flag, as the table first names it
    for option in table["options"]:
        if option["owners"]:
            title = " and ".join(option["owners"])
            if title not in groups:
                groups[title] = b.add_argument_group(title)
            _add_option(groups[title], option)
    b.add_argument("--force", action="store_true",
                   help="overwrite generated files that were edited by hand (the edits are lost; "
                   "without --force the build refuses and names them). Files you added to a report folder are "
                   "always kept")
    b.add_argument("--pdf", action="store_true",
                   help="also build the site and export one PDF per report (needs chromium)")
    out = b.add_mutually_exclusive_group()
    out.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    out.add_argument("-v", "--verbose", action="store_true", help="log each step, with tracebacks on errors")


def _steps(text: str) -> int:
    return bounded_int(text, 1, MAX_STEPS)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: choose 1 to 65535, or 0 for any free port")
    return port


def _add_serve_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "serve",
        help="serve the site on 127.0.0.1 with live reload and a form that regenerates a report",
        description="Build the site if needed (every report from the default inputs when docs/ has none), serve it on "
        "127.0.0.1 with live reload, and regenerate a report from a form on the landing and overview pages "
        "(or POST /api/regenerate) in this warm process: PyTorch, the models and MkDocs stay loaded and only "
        "the changed pages are rebuilt. One regeneration at a time; Ctrl-C stops.",
    )
    s.add_argument("--port", type=_port, default=8000, help="port on 127.0.0.1 (default 8000; 0 = any free port)")
    s.add_argument("--docs", type=Path, default=None,
                   help="docs folder holding the reports (default: the docs_dir of --config)")
    s.add_argument("--config", type=Path, default=None, help="mkdocs.yml to build with (default: ./mkdocs.yml)")
    out = s.add_mutually_exclusive_group()
    out.add_argument("-q", "--quiet", action="store_true", help="only the address and errors")
    out.add_argument("-v", "--verbose", action="store_true", help="log each request and step")


def build_request(args: argparse.Namespace) -> BuildRequest:
    """What the parsed `build` arguments ask for, as the one typed request the plugin and the server make too: the
    flags given (each read by its option's parser, as argparse did with ``type=``), by field name. A file a flag names
    that does not exist is refused here, before the reports (and PyTorch) load."""
    options = read_option_table()["options"]
    names = {option["dest"] for option in options}
    given = {name: value for name, value in vars(args).items() if name in names and value is not None}
    for option in options:
        if option["kind"] == "path" and option["dest"] in given:
            refuse_a_missing_file(given[option["dest"]], option["dest"].replace("_", " "), option["flag"])
    return BuildRequest(model=args.model, given=given, out=args.out, config=args.config, force=args.force,
                        pdf=args.pdf, quiet=args.quiet)
