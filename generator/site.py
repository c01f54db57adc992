"""Safe replacement of generated output inside docs/.

Generation writes into a staging folder next to the output; only when every page,
figure and JSON file was written are the old generated entries swapped for the new
ones. A failure or Ctrl-C before that leaves the previous site exactly as it was.
The manifest (docs/.generated.json) lists what the generator owns; anything else in
docs/ (hand-written pages, styles) is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from generator.errors import UserError

MANIFEST = ".generated.json"


def read_manifest(docs: Path) -> set[str]:
    try:
        return set(json.loads((docs / MANIFEST).read_text(encoding="utf-8"))["generated"])
    except FileNotFoundError:
        return set()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{docs / MANIFEST} is unreadable ({exc}); delete it and the generated folders it listed, then build again") from None


def _write_manifest(docs: Path, entries: set[str]) -> None:
    tmp = docs / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps({"generated": sorted(entries)}, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, docs / MANIFEST)


def claim(docs: Path, entry: str) -> None:
    """Record that ``docs/entry`` is generated output (for outputs written outside a staged build)."""
    _write_manifest(docs, read_manifest(docs) | {entry})


def check_writable(docs: Path) -> None:
    docs_abs = docs.resolve()
    parent = docs_abs if docs_abs.exists() else docs_abs.parent
    if docs_abs.exists() and not docs_abs.is_dir():
        raise UserError(f"output {docs} is a file, not a folder; choose another --out")
    if not parent.exists():
        raise UserError(f"cannot write to {docs}: its parent folder {parent} does not exist; create it or choose another --out")
    if not parent.is_dir():
        raise UserError(f"cannot write to {docs}: {parent} is not a folder; choose another --out")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"cannot write to {docs}: permission denied; choose another --out or fix its permissions")


def _swap(docs: Path, staging: Path, trash: Path, entries: list[str]) -> None:
    """Move old entries to trash and new ones in; undo the moves done so far on failure."""
    done: list[tuple[Path, Path]] = []
    try:
        for entry in entries:
            if (docs / entry).exists():
                os.replace(docs / entry, trash / entry)
                done.append((trash / entry, docs / entry))
            os.replace(staging / entry, docs / entry)
            done.append((docs / entry, staging / entry))
    except BaseException:
        for moved_to, came_from in reversed(done):
            os.replace(moved_to, came_from)
        raise


@contextmanager
def staged_output(docs: Path, entries: list[str]) -> Iterator[Path]:
    """Yield a staging folder; on success move ``entries`` from it into ``docs``."""
    check_writable(docs)
    try:
        docs.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write to {docs}: {exc.strerror or exc}; choose another --out") from None
    owned = read_manifest(docs)
    for entry in entries:
        if (docs / entry).exists() and entry not in owned:
            raise UserError(f"{docs / entry} exists but was not made by the generator; move it away, or build into another --out")
    try:
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=docs))
    except OSError as exc:
        raise UserError(f"cannot write to {docs}: {exc.strerror or exc}") from None
    trash = None
    try:
        yield staging
        trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=docs))
        _swap(docs, staging, trash, entries)
        _write_manifest(docs, owned | set(entries))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
