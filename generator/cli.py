"""Command line: `python -m transformer_trace build ...` (see --help): runs the command the arguments name.

The parser is generator/arguments.py, what a build request means generator/build_request.py; the docs folder's
machinery (staging, the build lock) is in generator/docs_folder/, the MkDocs plugin and `serve` in generator/site/:
neither imports this module.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
import warnings
from typing import TYPE_CHECKING

from transformer_trace.arguments import build_request, parser, program_name
from transformer_trace.errors import UserError, file_error
from transformer_trace.docs_folder.staging import interrupted_message, site_written
from transformer_trace.docs_folder.location import docs_dir, locate_site
from transformer_trace.text import terminal_line

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record is logged (basicConfig would keep the first call's stream)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _log_to_stderr() -> None:
    root = logging.getLogger()
    if not any(isinstance(h, _StderrHandler) for h in root.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        if root.level == logging.NOTSET or root.level > logging.WARNING:
            root.setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    from transformer_trace.trace import split_script_args

    argv, script_args = split_script_args(sys.argv[1:] if argv is None else list(argv))
    args = parser().parse_args(argv)  # from tables written from the registry: parsing imports no PyTorch
    if script_args is not None:
        args.script_args = script_args
    _log_to_stderr()
    logging.getLogger("transformer_trace").setLevel(logging.INFO if args.verbose else logging.WARNING)
    held: contextlib.AbstractContextManager[list[warnings.WarningMessage]] = (
        _held_warnings() if args.command != "serve" else contextlib.nullcontext([]))
    with held as caught:
        code = _run(args)
    if code == 0 or args.verbose:  # a refusal is one line: warnings the libraries printed on the way are not shown
        for w in caught:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return code


@contextlib.contextmanager
def _held_warnings() -> Iterator[list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:  # the filters in force decide what is shown, as without this
        yield caught


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "new":
            return _new(args)
        if args.command == "list":  # generator/snapshot_table.py: what to mark, read from a table (no PyTorch)
            from transformer_trace.snapshot_table import list_command

            return list_command(args)
        locate_site(args)  # ./mkdocs.yml (or --config) and its docs_dir, as `mkdocs` finds them
        if args.command == "build":
            return _build(args)
        if args.command == "serve":
            from transformer_trace.reports import REPORTS
            from transformer_trace.processes import die_with_parent
            from transformer_trace.site.server import serve

            die_with_parent(os.getppid())  # a SIGKILL to what started it (make serve) ends the server too
            return serve(args, REPORTS)
        if args.command == "train":
            from transformer_trace.reports import REPORTS

            training = REPORTS[args.model].training
            if training is None:  # the parser offers only the trainable reports
                raise UserError(f"the {args.model} report has no training recipe")
            training.main(args.steps, args.out, seed=args.seed, quiet=args.quiet)
            return 0
        if args.command == "trace":  # generator/trace/: runs the user's own script
            from transformer_trace.trace import refuse_a_missing_script, trace

            refuse_a_missing_script(args)  # before PyTorch loads
            return trace(args, _registry)  # loaded inside it, where a SIGTERM meanwhile writes --junit's file
        if args.command == "class":  # generator/classroom/: one page for many students' traces
            from transformer_trace.classroom import class_page

            return class_page(args)
        if args.command == "pdf":
            from transformer_trace.pdf import export
            from transformer_trace.reports import REPORTS

            export(args.out, args.config, REPORTS, quiet=args.quiet)
            return 0
    except UserError as exc:  # its message may quote the user's text: one line, nothing a terminal acts on
        print(f"error: {terminal_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(interrupted_message(exc), file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left (`list | head`): nothing to say, and nothing more to write
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the interpreter's last flush must not raise
        return 1
    except Exception as exc:  # a bug, not bad input: still one line unless asked for details
        if isinstance(exc, OSError) and (problem := file_error(exc)) is not None:  # a path the user gave
            print(f"error: {terminal_line(problem)}", file=sys.stderr)
            return 2
        if args.verbose:
            raise
        print(f"internal error: {type(exc).__name__}: {terminal_line(exc)} "
              "(run again with --verbose for the traceback)",
              file=sys.stderr)
        return 1
    return 0


def _registry() -> Mapping[str, Report]:
    """The reports' registry, imported when a command needs it (it loads PyTorch)."""
    from transformer_trace.reports import REPORTS

    return REPORTS


def _browse_command(out: Path, config: Path | None) -> str:
    """`mkdocs serve` shows the docs_dir of ./mkdocs.yml; another folder is served by our own server."""
    if config is not None and out.resolve() == docs_dir(config).resolve():
        here = config.resolve() == (Path.cwd() / config.name).resolve()
        return "mkdocs serve" if here else f"mkdocs serve -f {shlex.quote(str(config))}"
    with_config = f" --config {shlex.quote(str(config))}" if config else ""
    return f"{program_name()} serve --docs {shlex.quote(str(out))}{with_config}"


def _new(args: argparse.Namespace) -> int:
    from transformer_trace.new_command import new_site

    written = new_site(args.folder)
    if not args.quiet:
        files = terminal_line(", ".join(str(path) for path in written))
        folder = str(args.folder)  # a name the terminal would not show as typed gets no command to copy
        then = f"cd {shlex.quote(folder)} && mkdocs serve" if terminal_line(folder) == folder else "mkdocs serve in it"
        print(f"wrote {files}; then: {then}")
    return 0


def _build(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    request = build_request(args)  # a missing --image is refused here, before PyTorch loads
    from transformer_trace.build_request import run_build
    from transformer_trace.reports import REPORTS

    result = run_build(request, REPORTS)
    if args.pdf:
        from transformer_trace.pdf import export

        with site_written(args.out):  # a Ctrl-C while printing comes after the new reports went live
            export(args.out, args.config, REPORTS, quiet=args.quiet)
    if not args.quiet:
        seconds = time.perf_counter() - started
        print(f"wrote {', '.join(result.reports)} into {args.out} in {seconds:.1f} s; "
              f"browse with: {_browse_command(args.out, args.config)}")
        for failure in result.failed_checks:
            print(f"warning: check failed: {failure}", file=sys.stderr)
    return 0
