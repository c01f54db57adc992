"""Write the class page: OUT/index.md (Markdown with HTML tables: sortable, each in a box of its own that scrolls
sideways when wider than the page, and a heat map of students × the snapshots some student marked), OUT/class.json
(the same counts for scripts) and OUT/class.csv (the students' table with every verdict, for a spreadsheet), from the
students' traced reports (tally.py)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from transformer_trace.classroom.students import Student
from transformer_trace.classroom.tally import as_json, tally
from transformer_trace.text import breakable
from transformer_trace.trace.verdicts import FAILED, NOT_CAPTURED, NOT_CHECKABLE, PASSED, UNRECOGNISED

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "classroom"
SYMBOLS = {PASSED: "✓", FAILED: "✗", UNRECOGNISED: "?", NOT_CHECKABLE: "·", NOT_CAPTURED: ""}
FAILURE_ROWS = 30  # the most common failures listed on the page; class.json has them all
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")  # and direction overrides


def shown(name: str) -> str:
    """A name as one line: control characters (a newline) written as their escapes, so a name cannot end an HTML block
    of the Markdown page or start a new line of it; the environment then escapes it as HTML."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), name)


def breakable_name(name: str) -> Markup:
    """A student's name as HTML that a narrow column breaks only after its separators (``alice_nguyen`` ->
    ``alice_<wbr>nguyen``), never inside a word: the cells' CSS allows no other break. The reports' tables break their
    names with the same helper (text.breakable)."""
    return Markup(breakable(shown(name), lambda part: str(escape(part))))


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def with_code(text: object) -> Markup:
    """A check's message as an HTML cell's text: its Markdown code spans (`p["proj"]`, the student's code) as
    <code>, since Markdown inside the page's HTML tables is not rendered; everything escaped, control characters
    shown as escapes (``shown``)."""
    parts = _CODE_SPAN.split(shown(str(text)))
    return Markup("".join(f"<code>{escape(part)}</code>" if odd else str(escape(part))
                          for odd, part in ((i % 2 == 1, part) for i, part in enumerate(parts))))


def _cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: one starting like a formula (=, +, -, @) gets a leading apostrophe."""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def class_csv(found: dict[str, Any]) -> str:
    """class.csv: one row per student (status, counts, first failure, why there is no report) and one column per
    snapshot of their catalogue with its verdict."""
    labels = list(dict.fromkeys(r.label for c in found["catalogues"] for r in c["snapshots"]))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", "catalogue", "status", "passed", "failed", "unrecognised", "not checkable",
                     "first failure", "check that failed", "marked at", "problem", *labels])
    for row in found["students"]:
        first = row.first_failure or {}
        writer.writerow([_cell(v) for v in (
            row.name, row.catalogue, row.status, row.counts["passed"], row.counts["failed"],
            row.counts["unrecognised"], row.counts["not checkable"], first.get("label", ""), first.get("message", ""),
            first.get("where", ""), row.problem,
            *(row.cells.get(label, "") for label in labels))])
    return out.getvalue()


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["shown"] = shown
    env.filters["breakable"] = breakable_name
    env.filters["with_code"] = with_code
    return env


def render_class(students: list[Student], page_folder: Path, title: str) -> tuple[str, dict[str, Any], str]:
    """The page's Markdown, class.json's data and class.csv; links are relative to ``page_folder`` (where index.md
    will live)."""
    found = tally(students, page_folder)
    text = _environment().get_template("class.md.j2").render(
        title=title, students=found["students"], catalogues=found["catalogues"], failures=found["failures"],
        totals=found["totals"], several=len(found["catalogues"]) > 1, limit=FAILURE_ROWS, symbols=SYMBOLS)
    return text, as_json(found), class_csv(found)


def write_class(out: Path, staging: Path, students: list[Student], title: str) -> dict[str, Any]:
    """Write the page into ``staging`` (moved to ``out`` when done); links point from ``out``."""
    text, data, table = render_class(students, out, title)
    staging.mkdir(parents=True, exist_ok=True)
    (staging / "index.md").write_text(text, encoding="utf-8")
    (staging / "class.csv").write_text(table, encoding="utf-8", newline="")
    (staging / "class.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return data
