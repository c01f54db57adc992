"""The traced script's interpreter as a process of its own: started in a session (and process group) of its own,
stopped from outside at --timeout, and nothing it started outlives the command.

What is stopped: the script's process group, and every process descended from this one that was not there before the
run, read from /proc. While the script runs, this process is the child subreaper of its tree (Linux
prctl(PR_SET_CHILD_SUBREAPER)), so a daemonised grandchild (double fork and setsid: another group, another session) is
re-parented to us, not to init, and is still found. Known limit: a process handed to another service (systemd-run, at,
a D-Bus activated one) is no descendant and is not stopped. If this process is killed with SIGKILL, the script's
interpreter sees a pipe only this process holds close and ends its own process group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterator
    from types import FrameType

    Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None  # what signal.signal returns

GRACE_SECONDS = 2.0  # between SIGTERM and SIGKILL
PR_SET_CHILD_SUBREAPER = 36


@dataclass
class Ended:
    returncode: int | None  # negative: the signal that ended it
    timed_out: bool
    seconds: float
    left_running: int  # processes the script left running after it ended, stopped by us


class Terminated(SystemExit):
    """SIGTERM to the command: the script's processes are stopped, and the command ends with 128 + 15, no report."""


@contextlib.contextmanager
def terminated_as_exit() -> Iterator[None]:
    """SIGTERM to the command raises Terminated for as long as the trace runs, before and after the script's run as
    during it, so that what the trace writes when stopped (the --junit file of a CI job's timeout) is written; the
    handler it replaced is restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_child(command: list[str], env: dict[str, str], timeout: float | None) -> Ended:
    before = descendants(os.getpid())
    subreaper = _set_subreaper(True)
    saved = _end_on_signals()
    started = time.monotonic()
    child, timed_out = None, False
    watched, held = os.pipe()  # the script's interpreter ends its group when ``held`` closes (this process ends)
    try:
        try:
            child = subprocess.Popen([*command, str(watched)], env=env, start_new_session=True, pass_fds=(watched,))
        finally:
            os.close(watched)
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:
        for signum in saved:  # a second Ctrl-C must not cut the cleanup short
            signal.signal(signum, signal.SIG_IGN)
        try:
            finished = child is not None and child.poll() is not None
            seconds = time.monotonic() - started
            stopped = end_processes(child, before) if child is not None else 0
            os.close(held)
            if subreaper:
                _set_subreaper(False)
        finally:  # whatever the cleanup raised, Ctrl-C is this process's again (an ignored SIGINT is inherited by
            for signum, handler in saved.items():  # every process it starts later: a server, a build)
                signal.signal(signum, handler)
    return Ended(child.returncode, timed_out, seconds, stopped if finished else 0)


def _end_on_signals() -> dict[signal.Signals, Handler]:
    """SIGINT and SIGTERM to the command raise here, and run_child's cleanup stops the script's processes."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    def terminate(signum, frame):
        raise Terminated(128 + signum)

    return {signal.SIGINT: signal.signal(signal.SIGINT, interrupt),
            signal.SIGTERM: signal.signal(signal.SIGTERM, terminate)}


def _set_subreaper(on: bool) -> bool:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux: a daemonised grandchild is a known limit there
        return False


def end_processes(child: subprocess.Popen, before: set[int]) -> int:
    """SIGTERM to the script's group and to every new descendant, SIGKILL after GRACE_SECONDS to what is left; how many
    processes besides the script's own were still running."""
    left = {pid for pid in descendants(os.getpid()) - before - {child.pid}
            if _alive(child, pid) and not _multiprocessing_helper(pid)}  # zombies reaped
    for sig, wait in ((signal.SIGTERM, GRACE_SECONDS), (signal.SIGKILL, GRACE_SECONDS)):
        alive = _signal_all(child, (descendants(os.getpid()) - before) | {child.pid}, sig)
        deadline = time.monotonic() + wait
        while alive and time.monotonic() < deadline:
            alive = {pid for pid in alive if _alive(child, pid)}
            if alive:
                time.sleep(0.02)
        if not alive:
            break
    return len(left)


def _multiprocessing_helper(pid: int) -> bool:
    """Whether ``pid`` is multiprocessing's resource tracker or fork server, which a `spawn` or `forkserver` pool
    starts and which ends by itself once the script has ended: not a process the script left running."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return b"from multiprocessing.resource_tracker import main" in command or \
        b"from multiprocessing.forkserver import main" in command


def _signal_all(child: subprocess.Popen, pids: set[int], sig: int) -> set[int]:
    try:
        os.killpg(child.pid, sig)  # the group: found even where /proc cannot show the tree
    except (ProcessLookupError, PermissionError):
        pass
    alive = set()
    for pid in pids:
        if not _alive(child, pid):
            continue
        try:
            os.kill(pid, sig)
            alive.add(pid)
        except ProcessLookupError:
            continue
    return alive


def _alive(child: subprocess.Popen, pid: int) -> bool:
    """Whether ``pid`` still runs; a finished child of ours is reaped (no zombie is left)."""
    if pid == child.pid:
        return child.poll() is None
    try:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return False
        return True
    except ChildProcessError:  # not our direct child: gone once /proc no longer lists it (or lists a zombie)
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False


def descendants(pid: int) -> set[int]:
    """The live processes descended from ``pid`` (Linux /proc; none found elsewhere). Read from each thread's list of
    the children it started (/proc/PID/task/TID/children), a few files, where the kernel has them; else from every
    process's parent in /proc/*/stat."""
    if not Path(f"/proc/{pid}/task/{pid}/children").exists():
        return _descendants_from_stat(pid)
    found: set[int] = set()
    todo = [pid]
    while todo:
        try:  # (pathlib's glob lets a folder that vanishes between its check and its listing raise)
            listings = list(Path(f"/proc/{todo.pop()}/task").glob("*/children"))
        except OSError:
            continue  # the process ended meanwhile
        for listing in listings:
            try:
                children = {int(child) for child in listing.read_text().split()}
            except (OSError, ValueError):
                continue  # the thread or the process ended meanwhile
            todo += children - found
            found |= children
    return found


def _descendants_from_stat(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found.add(child)
                todo.append(child)
    return found
