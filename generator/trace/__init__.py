"""`python -m transformer_trace trace SCRIPT.py`: run a user's own PyTorch script with its breakpoint comments traced,
and write a verified report of what it computed (markers.py: the marker forms; process.py and child/: the run in the
script's own interpreter; reading/capture.py: what it captured, read back; reading/capture_reading.py: the capture
read once, per snapshot and per record name and hit; reading/verify.py: shapes, layouts;
reading/checking.py: the catalogue's checks on the captured tensors; reading/pages.py: the pages and their verdicts;
report.py: writing them). What a report adds for tracing is its ``trace`` (a TraceSpec, reading/verify.py; each
report's own in generator/reports/<report>/trace.py); the CLI hands this package the registry's reports."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypedDict

from transformer_trace.errors import UserError
from transformer_trace.options import out_path
from transformer_trace.text import terminal_line
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.user_files import user_files

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report
    from transformer_trace.trace.markers import Marker
    from transformer_trace.trace.reading.capture import Capture


# where markers are looked for (reading/capture.py user_files): a module imported by a name computed as the script runs
# is not found before it runs
_LOOKED_IN = ("in it or in the modules of its folder it imports (`import`, `from ... import`, "
              "`importlib.import_module(\"name\")`)")


class Reads(TypedDict):
    """What the catalogue's checks read of the marked lines, as run_script takes it: the snapshots whose lines copy
    the local tensors they read, and per snapshot the kinds of module calls copied and the hit they are copied up to."""

    locals_for: frozenset[int]
    calls_for: Mapping[int, frozenset[str]]
    calls_at: Mapping[int, int]


def traceable(reports: Mapping[str, Report]) -> dict[str, Report]:
    """The reports a script's markers can be numbered for (those with a ``trace`` spec), in the given order."""
    return {key: report for key, report in reports.items() if report.trace is not None}


def reads_locals(catalogue: Report) -> frozenset[int]:
    """The snapshots whose checks read the local tensors their line reads (``TraceUse.reads_locals``: a head split
    checked against the projection the line split): only their lines copy them."""
    return frozenset(snap.number for snap in catalogue.snapshots
                     if any(check.TRACE.reads_locals for check in snap.checks))


# The kinds of module calls trace/reading/weights.py's bind reads besides those a check declares in TRACE.calls: a
# Linear step may be a Conv2d's patches (or a max-pool's map of them: reading/patch_grid.py), a chain of modules (a
# rearrange of the user's, LayerNorms, Linears: a patch embedding), an nn.MultiheadAttention's output projection, or a
# product with a parameter matrix the line reads by attribute (READ: reading/products.py); a LayerNorm the user's own.
# Of the user's modules, USER is any, USER_NORM one with a gain and a bias of its input's width, USER_LEAF one without
# parameters or modules of its own, USER_LINEAR one with a weight matrix (read as a projection where it reproduces its
# output), USER_EMBEDDING one with a table its integer input indexes (read as an embedding where its output is the
# table's rows).
CALLS_READ_WITH: dict[ModuleKind, tuple[ModuleKind, ...]] = {
    ModuleKind.LINEAR: (ModuleKind.CONV2D, ModuleKind.MAX_POOL2D, ModuleKind.MULTIHEAD_ATTENTION, ModuleKind.LAYER_NORM,
                        ModuleKind.USER_LEAF, ModuleKind.USER_LINEAR, ModuleKind.READ),
    ModuleKind.LAYER_NORM: (ModuleKind.USER_NORM,),
    ModuleKind.EMBEDDING: (ModuleKind.USER_EMBEDDING,),
}


def calls_read(catalogue: Report) -> dict[int, frozenset[ModuleKind]]:
    """Per snapshot, the kinds of module calls of its marked line its checks can read (``TraceUse.kinds``: the kinds
    of ``calls`` and ``also_calls``; READ: the module tensors the line reads by attribute): only these are copied in
    the script's interpreter."""
    found = {}
    for snap in catalogue.snapshots:
        checks = snap.checks
        kinds = set().union(*(check.TRACE.kinds for check in checks))
        found[snap.number] = frozenset(kinds.union(*(CALLS_READ_WITH.get(kind, ()) for kind in kinds)))
    return found


def calls_at(catalogue: Report, hit: int) -> dict[int, int]:
    """Per snapshot, the hit whose module calls its checks read (reading/pages.py ``_marked``: --hit for a step in the
    layer loop, else the first, or the second where the first was a dry run before the script's input existed:
    reading/forward_passes.py ``without_dry_runs``): the child copies calls, locals and attributes read at no later
    hit (a line that ran fewer times than that shows its last, an earlier one)."""
    from transformer_trace.trace.reading.pages import in_layer_loop

    return {snap.number: hit if in_layer_loop(snap) else 2 for snap in catalogue.snapshots}


def as_traced(markers: list[Marker], numbering: str, reports: Mapping[str, Report],
              hit: int = 1) -> tuple[list[Marker], Reads]:
    """The markers as `trace` runs them for ``numbering`` (the catalogue's variable where a marker names none), and
    run_script's ``locals_for``, ``calls_for`` and ``calls_at``: what the catalogue's checks read of the marked lines,
    and at which hit (``hit``: --hit) (nothing, for the script's own points). benchmarks/ measure the tracer so."""
    if numbering not in reports:
        return markers, {"locals_for": frozenset(), "calls_for": {}, "calls_at": {}}
    from transformer_trace.trace.markers import with_catalogue_names

    catalogue = reports[numbering]
    markers = with_catalogue_names(markers, {snap.number: snap.variable for snap in catalogue.snapshots})
    return markers, {"locals_for": reads_locals(catalogue), "calls_for": calls_read(catalogue),
                     "calls_at": calls_at(catalogue, hit)}


def numberings(reports: Mapping[str, Report]) -> dict[tuple[str, str], str]:
    """(marker keyword, letter) -> the key of the report that numbers its snapshots so: what markers.scan reads."""
    return {(report.trace_spec.keyword, report.trace_spec.letter): key for key, report in traceable(reports).items()}


def marker_forms(reports: Mapping[str, Report]) -> str:
    """The marker forms, for messages: one per report that can be traced, and the user's own."""
    forms = [f"{report.trace_spec.marker(13, report.label(13))} ({report.short_title})"
             for report in traceable(reports).values()]
    return ", ".join([*forms, "# trace: name"])


def add_parser(sub: argparse._SubParsersAction, default_out: Path | None, traceable_keys: Sequence[str]) -> None:
    """The `trace` command's arguments; ``traceable_keys``: the reports --report may name (the snapshot table's, so that
    parsing imports no PyTorch)."""
    t = sub.add_parser(
        "trace", help="run your own PyTorch script with breakpoint comments and write a verified report of it",
        description="Run SCRIPT.py as `python SCRIPT.py` would, capture the value of every line marked with a "
        "breakpoint "
        "comment (# BREAKPOINT S13, # Snapshot #13, # BREAKPOINT G05, # trace: name) once the line has run, and write "
        "a "
        "report with the catalogue's shapes and checks applied to your tensors. It runs your code: only trace scripts "
        "you trust.",
        epilog="examples:\n  python -m transformer_trace trace examples/encoder_decoder_trace.py\n  python -m "
        "transformer_trace trace my_model.py --hit 2 -- --image cat.jpg",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="python -m transformer_trace trace SCRIPT.py [options] [-- SCRIPT_ARGS ...]",
    )
    t.set_defaults(script_args=[])
    t.add_argument("script", type=_script_path, help="the Python script to run (its folder goes first on sys.path)")
    t.add_argument("--report", choices=("auto", *traceable_keys, "none"), default="auto",
                   help="the numbering of the markers: auto picks it from the markers found (default: auto); none: "
                   "only # trace: points")
    t.add_argument("--out", type=out_path, default=default_out,
                   help="docs folder to write into (default: the docs_dir of --config)")
    t.add_argument("--name", default=None,
                   help="the report's folder under --out (default: from the script's file name)")
    t.add_argument("--hit", type=_positive, default=1,
                   help="which hit of a line run many times the pages show (default: 1; data/ keeps all)")
    t.add_argument("--timeout", type=_seconds, default=None,
                   help="stop the script after this many seconds and report what was captured")
    t.add_argument("--pdf", action="store_true",
                   help="also build the site and print the report's print view to DIR/pdf/NAME.pdf, "
                   "as `python -m transformer_trace pdf` prints the bundled reports (needs chromium)")
    t.add_argument("--config", type=Path, default=None,
                   help="the mkdocs.yml whose docs_dir is written into, and with --pdf builds the site (default: "
                   "./mkdocs.yml)")
    t.add_argument("--junit", type=Path, default=None, metavar="FILE",
                   help="also write the checks as JUnit XML to FILE, one test case per snapshot, for CI test reports "
                   "(exit status: 0 no check failed, unrecognised steps included, 1 a check failed with evidence, "
                   "2 bad input or the script failed; a refusal too is written, as an error)")
    t.add_argument("--student", default=None, metavar="NAME",
                   help="whose trace the JUnit file reports: its test suite's name and the start of every classname, "
                   "so a class's merged files tell students apart (default: the report's --name)")
    t.add_argument("--junit-root", type=Path, default=None, metavar="DIR",
                   help="the folder the JUnit file's file= paths are relative to (default: the top level of the git "
                   "repository holding the script, as CI annotations read them)")
    t.add_argument("-q", "--quiet", action="store_true", help="no summary")
    t.add_argument("-v", "--verbose", action="store_true", help="tracebacks on internal errors")
    _junit_on_usage_errors(t)


def _junit_on_usage_errors(t: argparse.ArgumentParser) -> None:
    """A command line the parser refuses (`--timeout abc`: exit 2 before trace runs) still writes the JUnit file it
    names, with the refusal as its error, so that CI shows this student too."""
    given: list[str] = []
    parse, refuse = t.parse_known_args, t.error

    def remembering(args: Sequence[str] | None = None,
                    namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        given[:] = list(args or [])
        return parse(args, namespace)

    def refusing(message: str) -> NoReturn:
        _junit_of_usage_error(t, given, message)
        refuse(message)

    # Wrapped on this one parser (mypy refuses assigning to a method); ``remembering`` has one signature where
    # argparse's stubs overload parse_known_args on the namespace's type, and it returns what ``parse`` returns
    t.parse_known_args = remembering  # type: ignore[method-assign, assignment]
    t.error = refusing  # type: ignore[method-assign]


def _junit_of_usage_error(t: argparse.ArgumentParser, given: list[str], message: str) -> None:
    """Read --junit (and whose trace it is) from a command line the parser refused, as plain text; write the file."""
    lenient = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    lenient.add_argument("script", nargs="?", type=lambda text: Path(text) if text.strip() else Path(NO_SCRIPT),
                         default=Path("script.py"))
    for action in t._actions:  # every option that takes a value, as text: the one refused must not stop this reading
        if action.option_strings and action.nargs is None:
            lenient.add_argument(*action.option_strings, dest=action.dest)
    try:
        args, _ = lenient.parse_known_args(given)
    except (argparse.ArgumentError, SystemExit):
        return
    if args.junit is not None:
        args.junit = Path(args.junit)
        args.junit_root = Path(args.junit_root) if args.junit_root else None
        _junit_of_refusal(args, f"{t.prog}: {message}", "bad input")


NO_SCRIPT = "no script given"  # the JUnit test case's name for an empty script argument


def _script_path(text: str) -> Path:
    """The script argument as a path; an empty one (a CI loop whose student handed in no file: `trace "$script"`
    with nothing found) is refused as such, not read as the current folder ("." is a folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{NO_SCRIPT}: the script's path is empty")
    return Path(text)


def _positive(text: str) -> int:
    from transformer_trace.options import POSITIVE_LIMIT, bounded_int  # the build options' own bounds and wording

    return bounded_int(text, 1, POSITIVE_LIMIT)


def _seconds(text: str) -> float:
    from transformer_trace.options import shown

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, not {shown(text)}") from None
    if not value > 0 or value > 86400:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 86400, not {shown(text)}")
    return value


def choose_numbering(requested: str, markers: list, script: Path, reports: Mapping[str, Report]) -> str:
    numbered = sorted({m.numbering for m in markers if m.numbering != "custom"})
    if requested == "none":
        return "none"
    if requested != "auto":
        # a report of nothing captured helps no one: say what is there
        if not any(m.numbering == requested for m in markers):
            report = reports[requested]
            there = (f"; its markers are numbered for {' and '.join(numbered)}: use --report {numbered[0]}"
                     if numbered else "")
            raise UserError(f"{script}: --report {requested}: no {report.short_title} marker "
                            f"({report.trace_spec.marker(13, report.label(13))}) {_LOOKED_IN}{there}")
        return requested
    if not numbered:
        if any(m.numbering == "custom" for m in markers):
            return "none"
        raise UserError(f"{script}: no breakpoint comment found {_LOOKED_IN}; mark a line with one of: "
                        f"{marker_forms(reports)}")
    if len(numbered) > 1:
        raise UserError(f"{script}: markers of several numberings ({', '.join(numbered)}); choose one with --report")
    return numbered[0]


def trace(args: argparse.Namespace, registry: Callable[[], Mapping[str, Report]], command: str | None = None) -> int:
    """The trace command, numbering markers for ``reports`` (the registry's, from the CLI): a script, or a notebook's
    code cells run in order (generator/trace/notebook.py: converted to a script beside it, removed after the run); the
    exit status as generator/trace/verdicts.py says. With --junit, a refusal, an internal error, Ctrl-C or SIGTERM (a CI
    job's timeout or cancel) writes its JUnit file too (one error), so that CI shows every student;
    ``registry`` loads the reports (with PyTorch: seconds), called where a SIGTERM meanwhile is caught too."""
    from transformer_trace.trace.process import Terminated, terminated_as_exit

    try:
        with terminated_as_exit():
            return _trace_file(args, registry(), command)
    except UserError as exc:
        _junit_of_refusal(args, str(exc), "bad input")
        raise
    except (KeyboardInterrupt, Terminated) as exc:
        how = "by Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "by SIGTERM (a CI job's timeout or cancel)"
        _junit_of_refusal(args, f"the trace was stopped {how} before it ended", "interrupted")
        raise
    except Exception as exc:
        _junit_of_refusal(args, f"internal error: {type(exc).__name__}: {exc}", "internal error")
        raise


def junit_whose(args: argparse.Namespace, script: Path):  # -> junit.Whose
    """Whose trace the JUnit file reports: --student, else the report's name; its files relative to --junit-root,
    else the script's repository."""
    from transformer_trace.trace.junit import Whose, repository_root
    from transformer_trace.trace.naming import default_name

    student = getattr(args, "student", None) or args.name or default_name(script)
    given_root = getattr(args, "junit_root", None)
    root = given_root.resolve() if given_root is not None else repository_root(script)
    return Whose(student, script.resolve(), root)


def _junit_of_refusal(args: argparse.Namespace, why: str, kind: str) -> None:
    """Write the JUnit file of a trace that wrote no report, where --junit names a file that may be written."""
    from transformer_trace.trace import junit as junit_xml

    if getattr(args, "junit", None) is None:
        return
    try:
        junit_xml.check_target(args.junit)
        whose = junit_whose(args, args.script)
        junit_xml.write_junit(junit_xml.refusal_tree(whose, terminal_line(why), kind), args.junit)
    except (UserError, OSError):  # the refusal was of the --junit file itself, or it cannot be written: said already
        return


def _trace_file(args: argparse.Namespace, reports: Mapping[str, Report], command: str | None) -> int:
    from transformer_trace.trace.notebook import to_script, translate_error, write_beside

    path = args.script
    if path.suffix.lower() != ".ipynb" or not path.is_file():
        return _trace(args, reports, command, path)
    converted = to_script(path.resolve())
    script = write_beside(converted)
    try:
        return _trace(args, reports, command, script, notebook=path)
    except UserError as exc:  # a marker or a line of the notebook: its cell and line, not the script's
        raise UserError(translate_error(str(exc), script, converted.text)) from None
    finally:
        script.unlink(missing_ok=True)


def refuse_a_missing_script(args: argparse.Namespace) -> None:
    """The CLI's first check of a trace, before PyTorch is imported: a script that is not there or not a file is
    refused at once (with its JUnit file, as every refusal of a trace)."""
    try:
        check_script(args.script)
    except UserError as exc:
        _junit_of_refusal(args, str(exc), "bad input")
        raise


def check_script(script: Path) -> None:
    """Refuse a script that is not there or not a file."""
    if not script.exists():
        raise UserError(f"{script}: there is no such script")
    if not script.is_file():
        raise UserError(f"{script}: is {'a folder' if script.is_dir() else 'not a regular file'}, not a Python script")


def _check_numbers(markers: list, numbering: str, catalogue: Report) -> None:
    """Refuse a marker of the chosen numbering whose snapshot number the report's catalogue does not have."""
    known = {s.number for s in catalogue.snapshots}
    for marker in markers:
        for number in (marker.alternatives or (marker.number,)) if marker.numbering == numbering else ():
            if number not in known:
                label = catalogue.label
                raise UserError(f"{Path(marker.file).name}:{marker.line}: {marker.text!r}: the "
                                f"{catalogue.short_title} catalogue has "
                                f"{label(min(known))}–{label(max(known))}, no {label(number)}")


def as_typed_here(folder: Path) -> Path:
    """A folder as the user would type it here: relative to the current folder when inside it (`docs/vit-trace`, as
    the README says, not the absolute path --out's default resolves to), else as it is."""
    try:
        return folder.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return folder


def _print_summary(summary: dict, capture: Capture, catalogue: Report, written: Path) -> None:
    """The one-line summary of a trace (stdout), and its first failing snapshot if any (stderr)."""
    counts = summary["counts"]
    if not capture.stdout_ends_line:  # the script's last output left the line open: ours starts a new one
        print()
    print(terminal_line(f"traced {capture.script.name}: captured {counts['captured']} of {counts['total']} "
                        f"{catalogue.short_title} snapshots; checks: {counts['passed']} passed, {counts['failed']} "
                        f"failed, {counts['unrecognised']} unrecognised, {counts['unchecked']} not checkable; wrote "
                        f"{as_typed_here(written)}"))
    if summary["first_failure"]:
        print(f"first failing snapshot: {terminal_line(summary['first_failure'])}", file=sys.stderr)


def _trace(args: argparse.Namespace, reports: Mapping[str, Report], command: str | None, script: Path,
           notebook: Path | None = None) -> int:
    from transformer_trace.docs_folder.staging import HandEdits, staged_output
    from transformer_trace.trace.reading.capture import run_script
    from transformer_trace.trace.reading.capture_reading import read
    from transformer_trace.trace.markers import scan
    from transformer_trace.trace import junit as junit_xml, notebook as notebooks
    from transformer_trace.trace.naming import hand_edits_refusal, rerun_path, trace_name, trace_record
    from transformer_trace.trace.report import render
    from transformer_trace.trace.verdicts import exit_status

    check_script(script)
    script = script.resolve()
    markers = scan(user_files(script), numberings(reports))
    if not markers:
        raise UserError(f"{args.script}: no breakpoint comment found {_LOOKED_IN}; mark a line with one of: "
                        f"{marker_forms(reports)}")
    numbering = choose_numbering(args.report, markers, args.script, reports)
    if numbering != "none":
        catalogue = reports[numbering]
        _check_numbers(markers, numbering, catalogue)
    elif not any(m.point for m in markers):
        raise UserError(f"{args.script}: --report none reports the # trace: points, and the script has none "
                        f"({marker_forms(reports)})")
    markers, reads = as_traced(markers, numbering, reports, args.hit)
    # before the script runs: nothing of the user's is replaced
    name = trace_name(args.name, notebook or script, args.out, reports)
    if getattr(args, "junit", None) is not None:  # refuse before the script runs and anything is written
        junit_xml.check_target(args.junit)
    if getattr(args, "pdf", False):  # refuse before the script runs and anything is written
        from transformer_trace.pdf import find_chromium, site_dir

        find_chromium()
        site_dir(args.config, args.out)
    script_args = list(args.script_args)
    options = [*(["--report", args.report] if args.report != "auto" else []),
               *(["--hit", str(args.hit)] if args.hit != 1 else []),
               *(["--timeout", f"{args.timeout:g}"] if args.timeout else [])]
    shown = rerun_path(args.script, (notebook or script).resolve(), args.out)  # never the builder's absolute paths
    rerun = [shown, *options, *(["--", *script_args] if script_args else [])]
    command = command or "python -m transformer_trace trace " + shlex.join(rerun)
    capture = run_script(script, script_args, markers, args.timeout,
                         argv0=str(args.script) if notebook is None else None, **reads)
    if notebook is not None:  # the pages name the notebook, its cells and lines
        notebooks.as_notebook_capture(capture, notebook.resolve())
    if numbering == "none":
        from transformer_trace.trace.reading.pages import own_report

        catalogue = own_report(capture)
    from transformer_trace.docs_folder.new_folders import make_folders

    make_folders(args.out, "--out")  # docs/students/NAME of a class's loop: as checked before the script ran
    try:
        with staged_output(args.out, entries=[name], records={name: trace_record(notebook or script)}) as staging:
            trace_name(args.name, notebook or script, args.out, reports)  # again, locked: another trace ran meanwhile
            reading = read(catalogue, numbering, capture, args.hit)  # the capture's one reading
            summary = render(staging / name, name, reading, command, args.timeout)
            if notebook is not None:  # its own page: the notebook as saved
                notebooks.add_notebook_page(staging / name, notebook.resolve(), notebooks.to_script(notebook.resolve()))
    except HandEdits as exc:
        raise hand_edits_refusal(exc, args.out / name) from None
    if not args.quiet:
        _print_summary(summary, capture, catalogue, args.out / name)
    if getattr(args, "pdf", False):
        from transformer_trace.pdf import export

        export(args.out, args.config, reports, quiet=args.quiet)
    data = json.loads((args.out / name / "snapshots.json").read_text(encoding="utf-8"))
    if getattr(args, "junit", None) is not None:
        junit_xml.write_junit(junit_xml.junit_tree(data, junit_whose(args, notebook or script)), args.junit)
    if capture.error:
        for line in capture.error_traceback.splitlines():  # as python prints it: the tool is for debugging
            print(terminal_line(line), file=sys.stderr)
        print(f"error: the script failed: {terminal_line(capture.error)}; the report shows what was captured before it",
              file=sys.stderr)
    elif capture.timed_out:
        print(f"error: the script ran past --timeout {args.timeout:g} s; the report shows what was captured until then",
              file=sys.stderr)
    return exit_status(data)  # generator/trace/verdicts.py: 2 the script failed, 1 a check failed (evidence), else 0


def split_script_args(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`trace SCRIPT.py [options] -- ARGS`: the generator's own arguments and the script's (None when not a trace)."""
    if argv[:1] == ["trace"] and "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1:]
    return argv, None
