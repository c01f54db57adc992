"""Write the class page: OUT/index.md (Markdown with HTML tables: sortable, and a heat map of students × snapshots)
and OUT/class.json (the same counts for scripts), from the students' traced reports (tally.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jinja2

from transformer_trace.classroom.students import Student
from transformer_trace.classroom.tally import as_json, tally
from transformer_trace.trace.verdicts import FAILED, NOT_CAPTURED, NOT_CHECKABLE, PASSED, UNRECOGNISED

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "classroom"
SYMBOLS = {PASSED: "✓", FAILED: "✗", UNRECOGNISED: "?", NOT_CHECKABLE: "·", NOT_CAPTURED: ""}
FAILURE_ROWS = 30  # the most common failures listed on the page; class.json has them all
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")  # and direction overrides


def shown(name: str) -> str:
    """A name as one line: control characters (a newline) written as their escapes, so a name cannot end an HTML block
    of the Markdown page or start a new line of it; the environment then escapes it as HTML."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), name)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["shown"] = shown
    return env


def render_class(students: list[Student], page_folder: Path, title: str) -> tuple[str, dict[str, Any]]:
    """The page's Markdown and class.json's data; links are relative to ``page_folder`` (where index.md will live)."""
    found = tally(students, page_folder)
    text = _environment().get_template("class.md.j2").render(
        title=title, students=found["students"], catalogues=found["catalogues"], failures=found["failures"],
        totals=found["totals"], several=len(found["catalogues"]) > 1, limit=FAILURE_ROWS, symbols=SYMBOLS)
    return text, as_json(found)


def write_class(out: Path, staging: Path, students: list[Student], title: str) -> dict[str, Any]:
    """Write the page into ``staging`` (moved to ``out`` when done); links point from ``out``."""
    text, data = render_class(students, out, title)
    staging.mkdir(parents=True, exist_ok=True)
    (staging / "index.md").write_text(text, encoding="utf-8")
    (staging / "class.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return data
