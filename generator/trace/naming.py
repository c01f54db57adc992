"""The folder a trace report takes in docs/: a name nothing else of the site uses, and never one of the user's.

A trace is written to ``docs/<name>/``. The name may not be one a bundled report, a generated folder (the PDFs),
MkDocs or its themes write into the site (assets, search, 404.html, sitemap.xml, ...), or a home page (index.md,
README.md). A name already in use is refused unless it holds a trace of the same script (re-tracing it is fine):
the manifest (docs/.generated.json) records which script each trace is of. All this is decided before the script
runs, in one line, so nothing of the user's or of another report is ever replaced.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

from transformer_trace.errors import UserError

if TYPE_CHECKING:
    from transformer_trace.docs_folder.staging import HandEdits

# Folders and files of a built site or of docs/ that are not reports: the PDFs, the print views' and the themes' assets,
# MkDocs' own outputs, home pages. The bundled reports' folders are added from the registry (reserved_names).
SITE_NAMES = ("pdf", "print", "assets", "search", "stylesheets", "javascripts", "images", "img", "css", "js", "fonts",
              "overrides", "site", "docs", "404.html", "sitemap.xml", "sitemap.xml.gz", "objects.inv", "index.md",
              "readme.md", "index.html")
# A folder named like a page or a site file would sit where MkDocs puts pages and outputs.
FILE_SUFFIXES = (".md", ".markdown", ".html", ".htm", ".xml", ".gz", ".json", ".ipynb", ".txt", ".inv")
NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
SCRIPT = "trace_of"  # the manifest's record of a trace: the script it is of


def reserved_names(reports: Iterable[str]) -> set[str]:
    """The names a trace may not take: the site's own and ``reports``' folders (the registry's keys, from the CLI)."""
    return {*SITE_NAMES, *reports}


def default_name(script: Path) -> str:
    """The report's name from the script's file name: lowercase ASCII words joined by '-'; a name with no ASCII letter
    or digit (模型.py) gets one from its own characters, so two such scripts never share a folder."""
    ascii_text = unicodedata.normalize("NFKD", script.stem).encode("ascii", "ignore").decode().lower()
    name = re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")[:56].strip("-")
    if not name:
        name = "trace-" + hashlib.sha256(script.stem.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return name


def trace_name(given: str | None, script: Path, docs: Path, reports: Iterable[str]) -> str:
    """The folder under ``docs`` for the trace of ``script`` (resolved): ``given`` (--name) or the default; refused in
    one line when it is not a name a trace may take or holds something else, or when ``docs`` cannot be written."""
    from transformer_trace.docs_folder.new_folders import check_makeable
    from transformer_trace.docs_folder.staging import check_writable

    if docs.exists() or docs.is_symlink():
        check_writable(docs)
    else:  # docs/students/NAME of a class: made after the script ran (generator/docs_folder/new_folders.py)
        check_makeable(docs, "--out")
    name = given if given is not None else default_name(script)
    if given is not None:
        where = f"--name {name!r}"
    else:
        where = f"the report's name {name!r} (from the file name {script.name!r}; choose one with --name)"
    if not NAME.fullmatch(name) or name.endswith(FILE_SUFFIXES):
        raise UserError(f"{where}: use 1 to 64 lowercase letters, digits, '.', '_' or '-', starting with a letter or "
                        f"digit, not ending like a file ({', '.join(FILE_SUFFIXES)})")
    if name in (reserved := reserved_names(reports)):
        raise UserError(f"{where}: the site uses that name (the bundled reports, generated folders, MkDocs' own "
                        f"outputs: {', '.join(sorted(reserved))}); choose another")
    for page in (docs / f"{name}{suffix}" for suffix in (".md", ".markdown", ".ipynb")):
        if page.exists():  # MkDocs writes it to name/index.html, the address of the report's overview
            raise UserError(f"{where}: your page {page} has the address {name}/ that the report's overview would "
                            "take; choose another name")
    holder = _holder(docs, name, script)
    if holder is not None:
        raise UserError(f"{where}: {docs / name} holds {holder}; choose another name, or move it away")
    return name


def trace_record(script: Path) -> dict[str, str]:
    """What the manifest keeps about a trace: the script it is of, so that a re-trace of it may replace it."""
    return {SCRIPT: str(script)}


def _holder(docs: Path, name: str, script: Path) -> str | None:
    """What ``docs/name`` holds when it is not free for a trace of ``script``: None when free or its own trace."""
    from transformer_trace.docs_folder.configured import read_runs
    from transformer_trace.docs_folder.staging import read_manifest

    target = docs / name
    if not target.exists() and not target.is_symlink():
        return None
    if name not in read_manifest(docs):
        return "files of yours (not made by the generator)"
    record = read_runs(docs).get(name)
    if isinstance(record, dict) and SCRIPT in record:
        return None if record[SCRIPT] == str(script) else f"the trace of {record[SCRIPT]}"
    traced = _snapshots(target)
    if traced.get("traced") is True and traced.get("inputs", {}).get("script") == script.name:
        return None  # a trace of a script of that name from before the manifest recorded which one
    if traced.get("traced"):
        return f"the trace of {traced['inputs'].get('script')}"
    return "generated files of another kind"


class _Traced(TypedDict, total=False):
    """What a folder's snapshots.json says of the run it is of (a trace's: traced, and its script's name)."""

    traced: bool
    inputs: dict[str, object]


def _snapshots(folder: Path) -> _Traced:
    try:
        data = json.loads((folder / "snapshots.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not (isinstance(data, dict) and isinstance(data.get("inputs", {}), dict)):
        return {}
    return cast(_Traced, data)  # the keys read are checked where they are read


def rerun_path(typed: Path, script: Path, docs: Path) -> str:
    """The script as the report's Rerun command names it: as typed when that is a relative path, else relative to the
    docs folder's project, else its file name; never an absolute path of the machine that built the site."""
    if not typed.is_absolute() and not str(typed).startswith("~"):
        return str(typed)
    try:
        return script.relative_to(docs.resolve().parent).as_posix()
    except (ValueError, OSError):
        return script.name


def hand_edits_refusal(exc: HandEdits, folder: Path) -> UserError:
    """The staging's refusal of hand-edited generated files in trace's words: trace has no --force."""
    return UserError(f"{exc.summary}; move your edits elsewhere, or move {folder} away, and trace again")
