"""Safe replacement of generated output inside docs/.

Generation writes into a staging folder next to the output; only when every page,
figure and JSON file was written are the old generated entries (report folders,
index.md) swapped for the new ones. A failure or Ctrl-C before that leaves the
previous site exactly as it was.

Nothing of the user's is ever deleted. The manifest (docs/.generated.json) records,
for each generated entry, every file the generator wrote and its sha256. Files
outside the generated entries (hand-written pages, styles) are never touched. Files
the user adds inside a report folder are carried over into the new folder at the
same path (the build refuses if the new output writes that very path). A generated
file edited by hand makes the build refuse before anything is swapped in, unless
--force, which overwrites it. Generated files that a build no longer writes go. Empty
folders are the user's (the generator writes none) and are carried over too. A manifest
of the older format (entry names only, no digests) is migrated without deleting anything
the user could have written: see _keep_before_upgrade.

One build at a time: a lock file (docs/.build.lock: pid, host, start time; build_lock.py)
is held for the whole build, and a lock left by a dead process is taken over. Holding it is
what makes it safe to clear what killed builds left behind (.staging-*, .trash-*): only
folders holding the mark a build puts in them (.build-owner); anything else of that name
is the user's, left alone with a warning.

The swap, the manifest write and the removal of the old output run with Ctrl-C held
back (interrupts.py), so an interrupted build either changed nothing or wrote the whole new site. A
build killed outright during the swap (SIGKILL, power loss) is finished by the next
one: a staging folder holding a manifest is complete (the manifest is written last).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path, PurePosixPath

from transformer_trace.errors import UserError, file_error
from transformer_trace.docs_folder.build_lock import LOCK, build_lock  # noqa: F401 (callers take the lock from here)
from transformer_trace.docs_folder.configured import RUNS, read_runs
from transformer_trace.docs_folder.interrupts import (SiteWritten, ctrl_c_held, interrupted_message,  # noqa: F401
                                                     site_written)

log = logging.getLogger("transformer_trace")

MANIFEST = ".generated.json"
STAGING, TRASH = ".staging-", ".trash-"
OWNER = ".build-owner"  # in every staging and trash folder a build makes: what is not marked so is not ours to touch
BEFORE_UPGRADE = ".before-upgrade"  # under a version-1 manifest, the old files a build writes again are kept here
SHOWN = 3  # files named in a refusal; the others are counted

Digests = dict[str, str]  # path relative to the entry ("" when the entry is a file) -> sha256
# entry -> what the generator wrote there; None: owned, digests unknown (version 1)
Manifest = dict[str, Digests | None]


# --- the manifest: what the generator wrote --------------------------------------------------------------------

def read_manifest(docs: Path) -> Manifest:
    path = docs / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return _parse_manifest(data)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"{path} is unreadable ({exc}); delete it and the generated folders it listed, then build "
                        "again") from None


def _parse_manifest(data: dict | list) -> Manifest:
    """Version 2 maps entries to their files' digests. Version 1 (``{"generated": [names]}``, or a bare list, written
    before digests existed) only names the entries: None, digests unknown, so nothing in them counts as generated
    unless the new output writes that very path (see _user_files)."""
    if isinstance(data, list) or not isinstance(data.get("generated"), dict):
        names = data if isinstance(data, list) else data["generated"]
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise ValueError("generated must list entry names")
        return dict.fromkeys(names)
    if data.get("version") != 2:
        raise ValueError(f"unknown version {data.get('version')!r}")
    manifest = data["generated"]
    if not all(files is None or all(isinstance(d, str) for d in files.values()) for files in manifest.values()):
        raise ValueError("generated must map entries to {path: sha256}")
    return manifest


def _write_manifest(path: Path, manifest: Manifest, runs: dict | None = None) -> None:
    """Write the manifest; ``runs`` (configured.py: what each report was generated from) defaults to the
    records already in ``path``, for the entries that stay."""
    if runs is None:
        runs = read_runs(path.parent)
    runs = {key: record for key, record in runs.items() if key in manifest}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(
        json.dumps({"version": 2, "generated": manifest, RUNS: runs}, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    os.replace(tmp, path)


def claim(docs: Path, entry: str, written: Iterable[str] = ("",)) -> None:
    """Record files the generator wrote outside a staged build (paths relative to ``docs/entry``, "" for the entry
    itself).

    Files recorded earlier stay recorded while they exist; anything else in ``docs/entry`` stays the user's.
    """
    manifest = read_manifest(docs)
    present = _files(docs / entry)
    earlier = {rel: digest for rel, digest in (manifest.get(entry) or {}).items() if rel in present}
    manifest[entry] = earlier | {rel: _digest(present[rel]) for rel in written if rel in present}
    _write_manifest(docs / MANIFEST, manifest)


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()  # a dangling link is still something of the user's


def _files(path: Path) -> dict[str, Path]:
    """Every file under ``path`` by relative POSIX path ("" when ``path`` is a file). Linked folders are not entered."""
    if not path.is_dir() or path.is_symlink():
        return {"": path} if _exists(path) else {}
    found = {}
    for folder, subfolders, names in os.walk(path):
        base = Path(folder)
        for name in [*names, *(d for d in subfolders if (base / d).is_symlink())]:
            found[(base / name).relative_to(path).as_posix()] = base / name
    return dict(sorted(found.items()))


def _empty_folders(path: Path) -> list[str]:
    """Every empty folder under ``path`` by relative POSIX path (the generator writes none: they are the user's)."""
    if not path.is_dir() or path.is_symlink():
        return []
    return sorted((Path(folder).relative_to(path).as_posix() for folder, subfolders, names in os.walk(path)
                   if not subfolders and not names and Path(folder) != path))


def _digest(path: Path) -> str:
    if path.is_symlink():  # the generator writes no links: a link where a file was is an edit
        return "link:" + os.readlink(path)
    sha = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def _user_files(folder: Path, new: Path, written: Digests | None) -> list[str]:
    """What in ``folder`` (an entry of the old output) is the user's: files the manifest does not record, and empty
    folders. Under a version-1 manifest (``written`` None: digests unknown) the generator's files cannot be told
    from the user's, so every file is kept except those the new output ``new`` writes again
    (see _keep_before_upgrade)."""
    if written is None:
        return [rel for rel in _files(folder) if not _exists(new / rel)] + _empty_folders(folder)
    return [rel for rel in _files(folder) if rel not in written] + _empty_folders(folder)


def _edited_files(docs: Path, entries: list[str], manifest: Manifest) -> list[Path]:
    edited = []
    for entry in entries:
        written = manifest.get(entry) or {}
        edited += [
            path for rel, path in _files(docs / entry).items() if rel in written and _digest(path) != written[rel]
        ]
    return edited


def _names(paths: list[Path]) -> str:
    shown = ", ".join(str(p) for p in paths[:SHOWN])
    return shown + (f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else "")


def _refuse_foreign_entries(docs: Path, entries: list[str], manifest: Manifest) -> None:
    for entry in entries:
        if _exists(docs / entry) and entry not in manifest:
            # said without a command-line option: the MkDocs plugin builds into the site's docs_dir, the CLI into --out
            raise UserError(f"{docs / entry} exists but was not made by the generator; move it away, or write the "
                            "reports into another folder")


class HandEdits(UserError):
    """Generated files edited by hand; ``summary`` names them, the message adds what to do on the command line."""

    def __init__(self, edited: list[Path]) -> None:
        count = f"{len(edited)} generated file{'s' if len(edited) > 1 else ''}"
        self.summary = f"{count} edited by hand since the last build ({_names(edited)})"
        super().__init__(f"{self.summary}; move your edits elsewhere, or pass --force to overwrite them")


def _refuse_hand_edits(edited: list[Path]) -> None:
    if edited:
        raise HandEdits(edited)


def _to_carry(old: Path, new: Path, written: Digests | None) -> list[str]:
    """The user's files in ``old`` (read now: files added during the build count too) not yet in ``new``.

    A build killed during its swap may have carried some already (hard links, or copies with the same bytes).
    """
    return [rel for rel in _user_files(old, new, written) if not _same_file(old / rel, new / rel)]


def _same_file(a: Path, b: Path) -> bool:
    if a.is_dir() and not a.is_symlink():  # an empty folder of the user's: there already when the new output has it
        return b.is_dir() and not b.is_symlink()
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    if (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino):
        return True
    return stat.S_ISREG(sa.st_mode) and stat.S_ISREG(sb.st_mode) and _digest(a) == _digest(b)


def _clashes(new_folder: Path, rels: list[str]) -> list[str]:
    """The user's files that cannot be carried into ``new_folder``: the new output writes that path (or a parent of
    it)."""
    def taken(rel: str) -> bool:
        target = new_folder / rel
        parents = [new_folder / p for p in PurePosixPath(rel).parents if str(p) != "."]
        return _exists(target) or any(p.is_file() or p.is_symlink() for p in parents)
    return [rel for rel in rels if taken(rel)]


def _refuse_clashes(docs: Path, entry: str, rels: list[str]) -> None:
    if rels:
        paths = [docs / entry / rel for rel in rels]
        it = "it" if len(paths) == 1 else "them"
        raise UserError(f"{_names(paths)}: yours, but the new output writes the same path; rename {it} and build again")


# --- edits made by hand, as seen by the build in progress ------------------------------------------------------

_EDITED: ContextVar[frozenset[str]] = ContextVar("edited_by_hand", default=frozenset())


def edited_by_hand(*paths: Path) -> bool:
    """Whether the build in progress found any of ``paths`` edited by hand (with --force: not to be reused)."""
    return any(os.path.abspath(p) in _EDITED.get() for p in paths)


# --- the staged build ------------------------------------------------------------------------------------------

def resolved(docs: Path) -> Path:
    """``docs`` as an absolute path with links resolved; a link loop is the user's to fix, in one line."""
    try:
        return docs.resolve()
    except RuntimeError as exc:  # "Symlink loop" (Python < 3.13; 3.13 raises OSError ELOOP)
        raise UserError(f"{docs} is a symbolic link that leads back to itself ({exc}); give another path") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError(f"{docs} is a symbolic link that leads back to itself; give another path") from None
        raise file_error(exc) or UserError(f"cannot use {docs}: {exc}") from None


def check_writable(docs: Path) -> None:
    docs_abs = resolved(docs)
    parent = docs_abs if docs_abs.exists() else docs_abs.parent
    if docs_abs.exists() and not docs_abs.is_dir():
        raise UserError(f"output {docs} is a file, not a folder; choose another --out")
    if not parent.exists():
        raise UserError(f"cannot write to {docs}: its parent folder {parent} does not exist; create it or choose "
                        "another --out")
    if not parent.is_dir():
        raise UserError(f"cannot write to {docs}: {parent} is not a folder; choose another --out")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"cannot write to {docs}: permission denied; choose another --out or fix its permissions")


def _create_docs(docs: Path) -> None:
    check_writable(docs)
    try:
        docs.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write to {docs}: {exc.strerror or exc}; choose another --out") from None


def _trash_for(staging: Path) -> Path:
    return staging.with_name(TRASH + staging.name[len(STAGING):])


def _discard(staging: Path) -> None:
    # first: a staging folder with a manifest would be finished, not discarded
    (staging / MANIFEST).unlink(missing_ok=True)
    shutil.rmtree(staging, ignore_errors=True)
    if _ours(_trash_for(staging)):
        shutil.rmtree(_trash_for(staging), ignore_errors=True)


def _carry_user_files(old: Path, new: Path, rels: list[str]) -> None:
    """Put the user's files from the old output into the new one: hard links, so the old ones stay until the swap is
    done."""
    for rel in rels:
        source, target = old / rel, new / rel
        if not _exists(source):  # deleted by its owner meanwhile
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir() and not source.is_symlink():  # an empty folder
            target.mkdir(exist_ok=True)
            continue
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError:
            shutil.copy2(source, target, follow_symlinks=False)


def _swap(docs: Path, staging: Path, entries: list[str], manifest: Manifest) -> None:
    """Move old entries to trash and new ones in, carrying the user's files; undo the moves done so far on failure.

    Resumable: an entry already swapped is skipped, one half-swapped (old in trash, new still staged) is completed.
    """
    trash = _trash_for(staging)
    trash.mkdir(exist_ok=True)
    _mark_ours(trash)
    done: list[tuple[Path, Path]] = []
    try:
        for entry in entries:
            live, new, old = docs / entry, staging / entry, trash / entry
            if not _exists(new):
                continue
            current = live if _exists(live) else old  # old: a killed build moved it away but not the new one in
            users = _to_carry(current, new, manifest.get(entry, {}))
            _refuse_clashes(docs, entry, _clashes(new, users))
            _carry_user_files(current, new, users)
            if _exists(live):
                os.replace(live, old)
                done.append((old, live))
            os.replace(new, live)
            done.append((live, new))
    except BaseException:
        for moved_to, came_from in reversed(done):
            os.replace(moved_to, came_from)
        raise


def _keep_before_upgrade(docs: Path, staging: Path, entries: list[str]) -> None:
    """Entries recorded by a version-1 manifest (no digests): the generator cannot tell its old files from the
    user's. Files the new output does not write are carried over as the user's (_user_files); the old versions of
    those it writes again are kept in docs/.before-upgrade/ (hard links), in case the user had edited them."""
    backup = docs / BEFORE_UPGRADE
    saved, kept = [], []
    for entry in entries:
        old, new = docs / entry, staging / entry
        kept += [old / rel for rel in _user_files(old, new, None)]
        for rel, path in _files(old).items():
            if _exists(new / rel) and not _same_file(path, new / rel):
                target = backup / entry / rel if rel else backup / entry
                target.parent.mkdir(parents=True, exist_ok=True)
                target.unlink(missing_ok=True)
                try:
                    os.link(path, target, follow_symlinks=False)
                except OSError:
                    shutil.copy2(path, target, follow_symlinks=False)
                saved.append(path)
    if saved or kept:
        log.warning("%s was written by an older version, without digests, so the generator cannot tell its files from "
                    "yours: %d files it writes again were saved to %s first%s; delete what you do not need",
                    docs / MANIFEST, len(saved), backup,
                    f", and {len(kept)} others were kept where they are as yours ({_names(kept)})" if kept else "")


def _commit(docs: Path, staging: Path, entries: list[str], manifest: Manifest, records: dict | None = None) -> None:
    """Swap the complete new output in and record it; Ctrl-C meanwhile takes effect once the new site is live."""
    for entry in entries:  # refuse before anything moves; the swap checks again for files added since
        _refuse_clashes(
            docs, entry, _clashes(staging / entry, _to_carry(docs / entry, staging / entry, manifest.get(entry, {})))
        )
    kept = {entry: files for entry, files in manifest.items() if entry not in entries and _exists(docs / entry)}
    new = kept | {entry: {rel: _digest(path) for rel, path in _files(staging / entry).items()} for entry in entries}
    runs = {key: record for key, record in read_runs(docs).items() if key not in entries} | (records or {})
    _keep_before_upgrade(docs, staging, [entry for entry in entries if entry in manifest and manifest[entry] is None])
    # the output is complete: a build killed from here on is finished by the next
    _write_manifest(staging / MANIFEST, new, runs)
    with ctrl_c_held() as caught:
        _swap(docs, staging, entries, manifest)
        os.replace(staging / MANIFEST, docs / MANIFEST)
        _discard(staging)
    if caught:
        raise SiteWritten(docs)


def _mark_ours(folder: Path) -> None:
    (folder / OWNER).write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}) + "\n", encoding="utf-8")


def _ours(folder: Path) -> bool:
    """Whether ``folder`` is a staging or trash folder a build made: a real folder holding the build's mark.

    Anything else named .staging-* or .trash-* (planted, copied in, a link) is the user's: never finished, never
    deleted.
    """
    if folder.is_symlink() or not folder.is_dir():
        return False
    try:
        info = json.loads((folder / OWNER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and isinstance(info.get("pid"), int)


def _finish_or_discard_leftovers(docs: Path, manifest: Manifest) -> Manifest:
    """Clear what killed builds left (safe: we hold the lock). A complete staging folder is swapped in, others go.

    Only folders marked as a build's (_ours) are touched; others are named in a warning and left as they are.
    """
    foreign = []
    for staging in sorted(docs.glob(STAGING + "*")):
        if not _ours(staging):
            foreign.append(staging)
            continue
        if (staging / MANIFEST).is_file():
            entries = sorted(p.name for p in staging.iterdir() if not p.name.startswith("."))
            try:
                _swap(docs, staging, entries, manifest)
            except UserError as exc:
                raise UserError(f"a build killed earlier left {staging} to finish, but {exc}; or delete {staging} "
                                f"and {_trash_for(staging)} to drop that build") from None
            os.replace(staging / MANIFEST, docs / MANIFEST)
            manifest = read_manifest(docs)
        _discard(staging)
    for leftover in sorted(docs.glob(TRASH + "*")):
        if _ours(leftover):
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            foreign.append(leftover)
    if foreign:
        log.warning("left as they are, not made by the generator: %s", _names(foreign))
    (docs / (MANIFEST + ".tmp")).unlink(missing_ok=True)
    return manifest


_STAGING: ContextVar[Path | None] = ContextVar("staging", default=None)


def current_staging() -> Path | None:
    """The staging folder of the build in progress in this thread (None outside a build)."""
    return _STAGING.get()


@contextmanager
def staged_output(docs: Path, entries: list[str], force: bool = False, records: dict | None = None) -> Iterator[Path]:
    """Yield a staging folder; on success move ``entries`` from it into ``docs``, keeping the user's files there,
    and record in the manifest ``records`` (what each entry was generated from).

    Refuses (UserError) while another build writes ``docs``, when an entry exists that the generator did not
    make, when a user's file sits where the new output writes, and, unless ``force``, when a generated file
    was edited by hand.
    """
    _create_docs(docs)
    with build_lock(docs):
        manifest = _finish_or_discard_leftovers(docs, read_manifest(docs))
        _refuse_foreign_entries(docs, entries, manifest)
        edited = _edited_files(docs, entries, manifest)
        if not force:
            _refuse_hand_edits(edited)
        try:
            staging = Path(tempfile.mkdtemp(prefix=STAGING, dir=docs))
            _mark_ours(staging)
        except OSError as exc:
            raise UserError(f"cannot write to {docs}: {exc.strerror or exc}") from None
        seen_by_build = _EDITED.set(frozenset(os.path.abspath(p) for p in edited))
        building = _STAGING.set(staging)
        try:
            yield staging
            if not force:  # edited while we worked
                _refuse_hand_edits(_edited_files(docs, entries, manifest))
            _commit(docs, staging, entries, manifest, records)
        finally:
            _EDITED.reset(seen_by_build)
            _STAGING.reset(building)
            _discard(staging)
