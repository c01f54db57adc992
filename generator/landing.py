"""The landing page (one card per generated report) and which report PDFs are still current.

Both the build and the PDF export rewrite the landing page; they share this module.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report

PDF_INDEX = "index.json"  # report -> digest of the snapshots.json its PDF was printed from


def landing_is_ours(docs: Path) -> bool:
    """Whether the build may write docs/index.md: no home page of the site's own is there. MkDocs takes README.md for
    index.md, so a README.md is one too; an index.md is the site's unless the manifest records it as generated."""
    from transformer_trace.docs_folder.staging import read_manifest

    return not (docs / "README.md").exists() and (not (docs / "index.md").exists() or "index.md" in read_manifest(docs))


def report_digest(report_dir: Path) -> str:
    return hashlib.sha256((report_dir / "snapshots.json").read_bytes()).hexdigest()


def pdf_is_current(docs: Path, key: str, report_dir: Path) -> bool:
    """Whether docs/pdf/<key>.pdf was printed from exactly the report now in ``report_dir``."""
    try:
        printed_from = json.loads((docs / "pdf" / PDF_INDEX).read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError):
        return False
    return ((docs / "pdf" / f"{key}.pdf").is_file() and (report_dir / "snapshots.json").is_file()
            and printed_from == report_digest(report_dir))


def landing_entries(docs: Path, staging: Path, fresh: set[str] | dict,
                    reports: Mapping[str, Report]) -> list[dict[str, Any]]:
    """Every generated report of ``reports`` for the landing page: the ``fresh`` ones from staging, the others as they
    are in docs/."""
    entries = []
    for key, report in reports.items():
        folder = staging if key in fresh else docs
        try:
            data = json.loads((folder / key / "snapshots.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        entries.append({
            "key": key,
            "title": report.title,
            "summary": data.get("summary", ""),
            "facts": data.get("facts", []),
            "count": len(data["snapshots"]),
            "passed": sum(1 for s in data["snapshots"] if s["check"]["passed"]),
            "pdf": f"pdf/{key}.pdf" if pdf_is_current(docs, key, folder / key) else None,
        })
    return entries


def write_landing(out_dir: Path, entries: list[dict[str, Any]], reports: Mapping[str, Report]) -> None:
    from transformer_trace.render import environment

    examples = [shlex.join(["--model", key, *report.run_options.example_change()]) for key, report in reports.items()]
    text = environment().get_template("landing.md.j2").render(reports=entries, examples=examples)
    (out_dir / "index.md").write_text(text, encoding="utf-8")
