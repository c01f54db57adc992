"""`python -m generator trace SCRIPT.py`: run a user's own PyTorch script with its breakpoint comments traced, and
write a verified report of what it computed (markers.py: the marker forms; capture.py: the run; verify.py: shapes, layouts;
checking.py: the catalogue's checks on the captured tensors; pages.py: the pages and their verdicts; report.py: writing them). What a report adds for tracing
lives in its own folder, generator/reports/<report>/trace.py."""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from generator.errors import UserError



@functools.cache
def specs() -> dict[str, Any]:
    """Report key -> its ``TraceSpec`` (generator/reports/<report>/trace.py), for the reports that have one, in the
    registry's order: the numberings `trace` knows."""
    from generator.reports import REPORTS

    found = {}
    for key, report in REPORTS.items():
        name = f"{report.package}.trace"
        if importlib.util.find_spec(name) is not None:
            found[key] = importlib.import_module(name).TRACE
    return found


def marker_forms() -> str:
    """The marker forms, for messages: one per report that can be traced, and the user's own."""
    from generator.reports import REPORTS

    forms = [f"{spec.marker(13, REPORTS[key].label(13))} ({REPORTS[key].short_title})" for key, spec in specs().items()]
    return ", ".join([*forms, "# trace: name"])


def add_parser(sub: argparse._SubParsersAction, default_out: Path | None = None) -> None:
    t = sub.add_parser(
        "trace", help="run your own PyTorch script with breakpoint comments and write a verified report of it",
        description="Run SCRIPT.py as `python SCRIPT.py` would, capture the value of every line marked with a breakpoint "
        "comment (# BREAKPOINT S13, # Snapshot #13, # BREAKPOINT G05, # trace: name) once the line has run, and write a "
        "report with the catalogue's shapes and checks applied to your tensors. It runs your code: only trace scripts you trust.",
        epilog="examples:\n  python -m generator trace examples/encoder_decoder_trace.py\n  python -m generator trace my_model.py --hit 2 -- --image cat.jpg",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="python -m generator trace SCRIPT.py [options] [-- SCRIPT_ARGS ...]",
    )
    t.set_defaults(script_args=[])
    t.add_argument("script", type=Path, help="the Python script to run (its folder goes first on sys.path)")
    t.add_argument("--report", choices=("auto", *specs(), "none"), default="auto",
                   help="the numbering of the markers: auto picks it from the markers found (default: auto); none: only # trace: points")
    t.add_argument("--out", type=Path, default=default_out,
                   help="docs folder to write into (default: the docs_dir of --config)")
    t.add_argument("--name", default=None, help="the report's folder under --out (default: from the script's file name)")
    t.add_argument("--hit", type=_positive, default=1, help="which hit of a line run many times the pages show (default: 1; data/ keeps all)")
    t.add_argument("--timeout", type=_seconds, default=None, help="stop the script after this many seconds and report what was captured")
    t.add_argument("--pdf", action="store_true", help="also build the site and print the report's print view to DIR/pdf/NAME.pdf, "
                   "as `python -m generator pdf` prints the bundled reports (needs chromium)")
    t.add_argument("--config", type=Path, default=None,
                   help="the mkdocs.yml whose docs_dir is written into, and with --pdf builds the site (default: ./mkdocs.yml)")
    t.add_argument("-q", "--quiet", action="store_true", help="no summary")
    t.add_argument("-v", "--verbose", action="store_true", help="tracebacks on internal errors")


def _positive(text: str) -> int:
    from generator.options import POSITIVE_LIMIT, bounded_int  # the build options' own bounds and wording

    return bounded_int(text, 1, POSITIVE_LIMIT)


def _seconds(text: str) -> float:
    from generator.options import shown

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, not {shown(text)}") from None
    if not value > 0 or value > 86400:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 86400, not {shown(text)}")
    return value


def choose_numbering(requested: str, markers: list, script: Path) -> str:
    numbered = sorted({m.numbering for m in markers if m.numbering != "custom"})
    if requested == "none":
        return "none"
    if requested != "auto":
        if not any(m.numbering == requested for m in markers):  # a report of nothing captured helps no one: say what is there
            from generator.reports import REPORTS

            report = REPORTS[requested]
            there = f"; its markers are numbered for {' and '.join(numbered)}: use --report {numbered[0]}" if numbered else ""
            raise UserError(f"{script}: --report {requested}: no {report.short_title} marker "
                            f"({specs()[requested].marker(13, report.label(13))}) in it or beside it{there}")
        return requested
    if not numbered:
        if any(m.numbering == "custom" for m in markers):
            return "none"
        raise UserError(f"{script}: no breakpoint comment found in it or beside it; mark a line with one of: {marker_forms()}")
    if len(numbered) > 1:
        raise UserError(f"{script}: markers of several numberings ({', '.join(numbered)}); choose one with --report")
    return numbered[0]


def trace(args: argparse.Namespace, command: str | None = None) -> int:
    from generator.reports import REPORTS
    from generator.site.staging import staged_output
    from generator.trace.capture import run_script, user_files
    from generator.trace.markers import scan
    from generator.trace.report import render

    script = args.script
    if not script.exists():
        raise UserError(f"{script}: there is no such script")
    if not script.is_file():
        raise UserError(f"{script}: is {'a folder' if script.is_dir() else 'not a regular file'}, not a Python script")
    script = script.resolve()
    markers = scan(user_files(script))
    if not markers:
        raise UserError(f"{args.script}: no breakpoint comment found in it or beside it; mark a line with one of: {marker_forms()}")
    numbering = choose_numbering(args.report, markers, args.script)
    if numbering != "none":
        catalogue = REPORTS[numbering]
        known = {s.number for s in catalogue.snapshots}
        for marker in markers:
            for number in (marker.alternatives or (marker.number,)) if marker.numbering == numbering else ():
                if number not in known:
                    label = catalogue.label
                    raise UserError(f"{Path(marker.file).name}:{marker.line}: {marker.text!r}: the {catalogue.short_title} catalogue has "
                                    f"{label(min(known))}–{label(max(known))}, no {label(number)}")
    elif not any(m.point for m in markers):
        raise UserError(f"{args.script}: --report none reports the # trace: points, and the script has none ({marker_forms()})")
    if numbering in REPORTS:
        from generator.trace.markers import with_catalogue_names

        markers = with_catalogue_names(markers, {snap.number: snap.variable for snap in REPORTS[numbering].snapshots})
    name = args.name or re.sub(r"[^a-z0-9]+", "-", script.stem.lower()).strip("-") or "trace"
    # A folder named like a page (x.md) would sit where the site's own pages go (docs/index.md) and confuse MkDocs.
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", name) or name in REPORTS or name.endswith(".md"):
        raise UserError(f"--name {name!r}: use lowercase letters, digits, '.', '_' or '-', not ending in .md, and not a bundled "
                        f"report's name ({', '.join(REPORTS)})")
    if getattr(args, "pdf", False):  # refuse before the script runs and anything is written
        from generator.pdf import find_chromium, site_dir

        find_chromium()
        site_dir(args.config, args.out)
    script_args = list(args.script_args)
    options = [*(["--report", args.report] if args.report != "auto" else []), *(["--hit", str(args.hit)] if args.hit != 1 else []),
               *(["--timeout", f"{args.timeout:g}"] if args.timeout else [])]
    command = command or "python -m generator trace " + shlex.join([str(args.script), *options, *(["--", *script_args] if script_args else [])])
    capture = run_script(script, script_args, markers, args.timeout)
    if numbering == "none":
        from generator.trace.pages import own_catalogue

        catalogue = own_catalogue(capture)
    with staged_output(args.out, entries=[name]) as staging:
        summary = render(staging / name, name, catalogue, numbering, capture, args.hit, command, args.timeout)
    counts = summary["counts"]
    if not args.quiet:
        print(f"traced {script.name}: captured {counts['captured']} of {counts['total']} {catalogue.short_title} snapshots; checks: "
              f"{counts['passed']} passed, {counts['failed']} failed, {counts['unchecked']} not checkable; wrote {args.out / name}")
        if summary["first_failure"]:
            print(f"first failing snapshot: {summary['first_failure']}", file=sys.stderr)
    if getattr(args, "pdf", False):
        from generator.pdf import export

        export(args.out, args.config, quiet=args.quiet)
    if capture.error:
        print(f"error: the script failed: {capture.error}; the report shows what was captured before it", file=sys.stderr)
        return 2
    if capture.timed_out:
        print(f"error: the script ran past --timeout {args.timeout:g} s; the report shows what was captured until then", file=sys.stderr)
        return 2
    return 0


def split_script_args(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`trace SCRIPT.py [options] -- ARGS`: the generator's own arguments and the script's (None when not a trace)."""
    if argv[:1] == ["trace"] and "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1:]
    return argv, None
