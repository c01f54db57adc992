"""`python -m transformer_trace class OUT REPORT...`: one page for a whole class, from each student's traced report
(students.py: reading them; tally.py: the counts; page.py: the page)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from transformer_trace.errors import UserError


def add_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "class", help="one page for a class: per snapshot how many students passed or failed, the common failures, "
        "each student's first",
        description="Read the reports `python -m transformer_trace trace` wrote for each student (their folders, or "
        "their snapshots.json files; a student's name is the folder's name) and write one section OUT/index.md (+ "
        "OUT/class.json): per snapshot how many were captured, passed, failed, not checkable; the failures most "
        "students hit and who hit them; each student's first failure, with links to their own pages; a heat map of "
        "students × snapshots. Put OUT beside the students' reports in the docs folder so that the links work in the "
        "built site.",
        epilog="example:\n  python -m transformer_trace class docs/class docs/students/*/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("out", type=Path,
                   help="the folder to write the class page into (made or replaced; nothing else beside it changes)")
    c.add_argument("reports", type=Path, nargs="+",
                   help="each student's report folder (or a folder holding it, or its snapshots.json)")
    c.add_argument("--title", default="Class report", help="the page's title (default: Class report)")
    c.add_argument("-q", "--quiet", action="store_true", help="no summary")
    c.add_argument("-v", "--verbose", action="store_true", help="tracebacks on internal errors")


def class_page(args: argparse.Namespace) -> int:
    from transformer_trace.classroom.page import write_class
    from transformer_trace.classroom.students import read_students
    from transformer_trace.docs_folder.staging import staged_output
    from transformer_trace.text import terminal_line

    started = time.perf_counter()
    out = args.out.resolve()
    if out.exists() and not out.is_dir():
        raise UserError(f"{args.out}: is a file; give the folder to write the class page into")
    if any(out == p.resolve() or out in p.resolve().parents for p in args.reports):
        raise UserError(f"{args.out}: is a student's report folder (or holds one); write the class page beside them")
    students = read_students(args.reports)
    for student in students:
        if student.unreadable:
            print(f"warning: {terminal_line(student.unreadable)}: {terminal_line(student.name)!r} is shown as "
                  "no report", file=sys.stderr)
    _warn_of_markup_in_names(students)
    with staged_output(out.parent, entries=[out.name]) as staging:
        data = write_class(out, staging / out.name, students, args.title)
    if not args.quiet:
        totals = data["totals"]
        seconds = time.perf_counter() - started
        print(f"wrote the class page of {len(students)} students into {args.out} in {seconds:.1f} s: "
              f"{totals['passed']} passed, {totals['failed']} failed a check, {totals['script failed']} script failed, "
              f"{totals['no report']} no report", file=sys.stdout)
    return 0


MARKUP = set("<>&\"'")  # what HTML reads in a title printed as it is


def _warn_of_markup_in_names(students: list) -> None:
    """The class page shows every name as text, and so does the transformer-trace plugin's navigation; MkDocs' own
    navigation (a site built without the plugin and without a nav of its own) prints a folder's name as HTML: said
    once, naming the folders, since no file written here can change that title."""
    from transformer_trace.text import terminal_line

    names = [student.name for student in students if MARKUP & set(student.name)]
    if names:
        shown = ", ".join(repr(terminal_line(name)) for name in names[:3]) + (" ..." if len(names) > 3 else "")
        print(f"warning: {len(names)} student folder name(s) hold HTML's characters ({shown}): MkDocs' own navigation "
              "prints folder names as HTML; build the site with the transformer-trace plugin (its navigation shows "
              "them as text) or give it a nav that leaves the students' folders out", file=sys.stderr)
