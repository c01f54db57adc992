"""Processes this program forks die with the process that forked them, however it ends (SIGKILL included): the figure
workers (build.py), the pages helper of a site build (site/parallel.py), the template compiler (template_cache.py).
A Ctrl-C (or a `kill`) that arrives while one is forked is held until the fork is over, so it is never lost."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_held_over_fork() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM inside the block (a fork) and hand them to their own handlers after it, in this process.

    Python runs a signal's handler wherever the main thread is, and during a fork that is inside the at-fork hooks
    (logging's lock release): there a KeyboardInterrupt is printed as "Exception ignored" and dropped, and the program
    goes on as if Ctrl-C had never been pressed. Held here, it is raised once the fork is over. A forked child drops
    what its parent held (the parent acts on it)."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread runs signal handlers
        yield
        return
    parent = os.getpid()
    held: list[int] = []
    previous = {signum: signal.getsignal(signum) for signum in STOPPING_SIGNALS}
    for signum, handler in previous.items():
        if callable(handler):
            signal.signal(signum, lambda number, frame: held.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if callable(handler):
                signal.signal(signum, handler)
    if os.getpid() == parent:
        for number in held:
            stopping = signal.Signals(number)
            if callable(after := previous[stopping]):
                after(stopping, None)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """In a child forked from process ``parent``: have Linux SIGKILL this process when its parent ends, and exit now
    if the parent already ended (between the fork and this call). Elsewhere than Linux the caller's own shutdown of
    its children is all there is."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no libc to load, or no prctl in it: not Linux
        pass
    if os.getppid() != parent:
        os._exit(1)
