"""Folders a command makes for its output when they do not exist yet (`trace --out docs/students/NAME`, `--junit
out/NAME/junit.xml`), as `mkdir -p` would, but safely: each missing folder is made one at a time under the nearest one
that exists, never over anything that exists (a file, a dangling link), and never through a symbolic link that leads
out of the current folder (the project the command runs in) into a folder the user did not name."""

from __future__ import annotations

import os
from pathlib import Path

from transformer_trace.errors import UserError


def _missing(folder: Path) -> tuple[Path, list[Path]]:
    """The nearest existing ancestor of ``folder`` (or ``folder`` itself) and the folders to make under it, outermost
    first. A dangling link counts as existing: nothing is made over it."""
    made: list[Path] = []
    current = folder
    while not current.exists() and not current.is_symlink():
        made.append(current)
        if current.parent == current:
            break
        current = current.parent
    return current, made[::-1]


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _link_out_of_project(existing: Path) -> Path | None:
    """Where ``existing`` really is when a symbolic link on its path leads out of the current folder although the path
    as written stays inside it; None otherwise."""
    written, real = Path(os.path.abspath(existing)), Path(os.path.realpath(existing))
    here = Path.cwd()
    if written == real or not _inside(written, Path(os.path.abspath(here))):
        return None
    return None if _inside(real, here.resolve()) else real


def check_makeable(folder: Path, option: str) -> None:
    """Refuse, in one line naming ``option`` (--out, --junit), a ``folder`` that is not one or cannot be made."""
    existing, made = _missing(folder)
    fix = f"choose another {option}"
    if existing.is_symlink() and not existing.exists():
        raise UserError(f"cannot write to {folder}: {existing} is a link to nothing; {fix} or remove the link")
    if not existing.is_dir():
        raise UserError(f"cannot write to {folder}: {existing} is not a folder; {fix}")
    if made and (elsewhere := _link_out_of_project(existing)) is not None:
        raise UserError(f"cannot make {folder}: {existing} is a link to {elsewhere}, outside the current folder; make "
                        f"the folder yourself or {fix}")
    if made and not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"cannot make {folder}: permission denied in {existing}; {fix} or fix its permissions")


def make_folders(folder: Path, option: str) -> list[Path]:
    """Make ``folder`` and its missing parents (refused as ``check_makeable`` says); the folders made."""
    check_makeable(folder, option)
    _, missing = _missing(folder)
    for path in missing:
        try:
            path.mkdir()
        except FileExistsError:  # made meanwhile: fine if it is a folder, never replaced if it is anything else
            if path.is_symlink() or not path.is_dir():
                raise UserError(f"cannot make {folder}: {path} appeared meanwhile and is not a folder; "
                                f"choose another {option}") from None
        except OSError as exc:
            raise UserError(f"cannot make {folder}: {exc.strerror or exc}; choose another {option}") from None
    return missing
