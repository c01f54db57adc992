"""One build at a time: a lock file in the docs folder (docs/.build.lock: pid, host, start time) held for the whole
build.

A lock left by a dead process (gone, a zombie, or an unreadable lock older than a few seconds) is taken over; one held
by a live process, or by a process on another host (whose processes we cannot see), makes the build refuse, in one
line naming the holder. Holding it is what makes it safe for staging.py to clear what killed builds left behind.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from transformer_trace.errors import UserError

LOCK = ".build.lock"
LOCK_BEING_WRITTEN_S = 10  # an unreadable lock younger than this belongs to a build that is still writing it


@contextmanager
def build_lock(docs: Path) -> Iterator[None]:
    """Hold ``docs/.build.lock`` for the duration; refuse while a live process holds it, take it over from a dead
    one."""
    lock = docs / LOCK
    mine = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                       "started": datetime.now().isoformat(timespec="seconds")})
    for _attempt in range(5):
        if _create_exclusively(lock, mine):
            break
        holder = _read_lock(lock)
        if holder is None:  # released meanwhile
            continue
        text, info = holder
        if _holder_alive(lock, info):
            raise UserError(_held_message(docs, lock, info))
        _remove_if_unchanged(lock, text)  # a dead build's lock: take it over
    else:
        raise UserError(f"cannot take the lock {lock}; delete it if no build is running, then build again")
    try:
        yield
    finally:
        _remove_if_unchanged(lock, mine)


def _create_exclusively(lock: Path, content: str) -> bool:
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    except OSError as exc:
        raise UserError(f"cannot write to {lock.parent}: {exc.strerror or exc}; choose another --out") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(content + "\n")
    return True


def _read_lock(lock: Path) -> tuple[str, dict] | None:
    try:
        text = lock.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        info = json.loads(text)
        info = info if isinstance(info, dict) and isinstance(info.get("pid"), int) else {}
    except ValueError:
        info = {}
    return text, info


def _holder_alive(lock: Path, info: dict) -> bool:
    if not info:  # no content yet: a build that just created it, unless it is old garbage
        try:
            return time.time() - lock.stat().st_mtime < LOCK_BEING_WRITTEN_S
        except FileNotFoundError:
            return False
    if info.get("host") != socket.gethostname():
        return True  # its processes are not ours to see: assume it runs
    return _pid_alive(info["pid"])


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    try:  # a zombie (exited, not yet reaped by its parent) builds nothing
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _held_message(docs: Path, lock: Path, info: dict) -> str:
    if not info:
        return f"another build is starting to write {docs}; wait for it to finish"
    try:
        started = datetime.fromisoformat(info.get("started", ""))
        when = started.strftime("%H:%M:%S" if started.date() == datetime.now().date() else "%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError):
        when = "at an unknown time"
    if info.get("host") != socket.gethostname():
        return (f"another build (pid {info['pid']} on {info.get('host')}, started {when}) is writing {docs}; "
                f"wait for it to finish, or delete {lock} if that build is gone")
    return f"another build (pid {info['pid']}, started {when}) is writing {docs}; wait for it to finish"


def _remove_if_unchanged(lock: Path, text: str) -> None:
    # Compare first so as not to remove a lock another build has just taken (the window left is tiny).
    try:
        if lock.read_text(encoding="utf-8").rstrip("\n") == text.rstrip("\n"):
            lock.unlink()
    except OSError:  # gone already, or not ours to remove: taking it then fails with a clear message
        pass
