"""The command line's arguments: the parser of `python -m transformer_trace`.

The build command's options come from the reports' option dataclasses (generator/options.py and
generator/reports/<report>/options.py): one flag per field, with its type (options.PARSERS), choices and default.
Parsed, they become a ``BuildRequest`` (generator/build_request.py: what a build request means), the same typed
object the MkDocs plugin and the warm server make from mkdocs.yml and a request's fields.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import MISSING, Field, fields
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NoReturn

from transformer_trace.build_request import ALL, BuildRequest
from transformer_trace.options import PARSERS, RunOptions, bounded_int, flag_of, option_kind, out_path, shown
from transformer_trace.version import package_version

if TYPE_CHECKING:
    from transformer_trace.catalogue import Report

COMMON = {f.name for f in fields(RunOptions)}
MAX_STEPS = 100_000  # `train --steps`: about ten hours of the GPT's recipe on two CPU cores (0.35 s a step)


def program_name() -> str:
    """How the user started the command, for help and messages: the console script, or `python -m transformer_trace`."""
    return "transformer-trace" if Path(sys.argv[0]).name == "transformer-trace" else "python -m transformer_trace"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line and exit code 2, like every other input error (OptionRefused)
        self.exit(2, f"error: {message} (see --help)\n")


def _add_option(group: argparse._ActionsContainer, f: Field, defaults: str, help_text: str | None = None) -> None:
    meta = f.metadata
    group.add_argument(
        flag_of(f), dest=f.name, default=None, type=PARSERS[option_kind(f)], choices=meta.get("choices"),
        metavar=None if meta.get("choices") else f.name.upper(),
        help=f"{help_text or meta['help']} (default: {defaults})",
    )


def _default_text(f: Field) -> str:
    default = f.default if f.default is not MISSING else None
    return "the bundled input" if default is None else str(default)


def _add_pdf_parser(sub: argparse._SubParsersAction) -> None:
    pdf = sub.add_parser("pdf", help="build the site and print each report to docs/pdf/<report>.pdf",
                         description="Build the site with MkDocs, print every generated report's print view to PDF "
                         "through a headless Chromium, and link the PDFs from the landing page.")
    pdf.add_argument("--out", type=out_path, default=None,
                     help="docs folder holding the generated reports (default: the docs_dir of --config)")
    pdf.add_argument("--config", type=Path, default=None, help="mkdocs.yml to build with (default: ./mkdocs.yml)")
    pdf.add_argument("-q", "--quiet", action="store_true")
    pdf.add_argument("-v", "--verbose", action="store_true")


def _add_train_parser(sub: argparse._SubParsersAction, reports: Mapping[str, Report]) -> None:
    train = sub.add_parser("train",
                           help="train a report's model on its bundled corpus and write a checkpoint and its record",
                           description="Train a report's default-size model on its bundled corpus (the byte GPT: "
                           "CPython's pydoc topics, PSF licence) on the CPU, deterministically: the same seed gives "
                           "the same loss curve. Writes the state dict and a training record (PATH with .json: corpus "
                           "sha256, schedule, loss curve, held-out bits per byte, seconds).")
    train.add_argument("model", choices=[key for key, report in reports.items() if report.training is not None],
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


# The commands whose arguments name the reports' options (which can be built or trained): only these import the
# registry, and with it PyTorch (a report's options take their defaults from its model's configuration). `trace` names
# only the traceable reports' keys, read from the snapshot table (written from the catalogues): its refusals start
# without PyTorch.
WITH_REPORTS = ("build", "train")


def _command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first argument that is no option (None for `--help`, `--version`, nothing)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser; for ``argv`` (what it will parse), the reports are read only where its command
    takes them (WITH_REPORTS): `--version`, `--help`, `class`, `new` and their refusals start without PyTorch. The
    other commands are still listed, with their help; their own arguments then do not name the reports."""
    if argv is None or _command(argv) in WITH_REPORTS:
        from transformer_trace.reports import REPORTS

        reports: Mapping[str, Report] = REPORTS
    else:
        reports = {}
    p = _Parser(prog=program_name(),
                description="Generate the traced-Transformer report site from real forward passes.")
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_build_parser(sub, reports)
    _add_pdf_parser(sub)
    _add_train_parser(sub, reports)
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


def _add_build_parser(sub: argparse._SubParsersAction, reports: Mapping[str, Report]) -> None:
    keys = ", ".join(reports)
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
    b.add_argument("--model", choices=(ALL, *reports), default=ALL,
                   help=f"which report to (re)generate: {keys} or all (default: all)")
    for f in fields(RunOptions):
        _add_option(b, f, _default_text(f))
    b.add_argument("--out", type=out_path, default=None,
                   help="docs folder to write into (default: the docs_dir of --config)")
    b.add_argument("--config", type=Path, default=None,
                   help="mkdocs.yml whose transformer-trace plugin declares the reports and "
                   "their options: they are this command's defaults, flags override them (default: ./mkdocs.yml)")
    seen: dict[str, list[str]] = {}  # flag -> reports that take it (a flag shared by several reports is added once)
    for key, report in reports.items():
        own = [f for f in fields(report.run_options) if f.name not in COMMON and f.init]
        for f in own:
            seen.setdefault(flag_of(f), []).append(key)
    groups: dict[str, argparse._ArgumentGroup] = {}
    added: set[str] = set()
    for key, report in reports.items():
        for f in fields(report.run_options):
            flag = flag_of(f)
            if f.name in COMMON or flag in added or not f.init:
                continue
            owners = {o: next(g for g in fields(reports[o].run_options) if flag_of(g) == flag) for o in seen[flag]}
            group = groups.setdefault(" and ".join(owners), b.add_argument_group(" and ".join(owners)))
            if len(owners) == 1:
                _add_option(group, f, _default_text(f))
            else:  # one flag, several reports: each report's own meaning and default
                helps = {g.metadata["help"] for g in owners.values()}
                shared_help = (helps.pop() if len(helps) == 1
                               else "; ".join(f"{o}: {g.metadata['help']}" for o, g in owners.items()))
                defaults = ", ".join(f"{_default_text(g)} for {o}" for o, g in owners.items())
                _add_option(group, f, defaults, shared_help)
            added.add(flag)
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
    flags given (each read by its option's parser, as argparse did with ``type=``), by field name."""
    from transformer_trace.reports import REPORTS

    names = {f.name for report in REPORTS.values() for f in fields(report.run_options) if f.init}
    return BuildRequest(model=args.model, given={name: value for name, value in vars(args).items()
                                                 if name in names and value is not None},
                        out=args.out, config=args.config, force=args.force, pdf=args.pdf, quiet=args.quiet)
