"""Ctrl-C during a build: held back while the new site is swapped in, and told apart before and after it went live.

An interrupted build either changed nothing or wrote the whole new site; ``interrupted_message`` says which.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def ctrl_c_held() -> Iterator[list[int]]:
    """Record SIGINT instead of raising it inside the block; the caller raises afterwards if the list is not empty."""
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) in (signal.SIG_IGN,
                                                                                                        None):
        yield caught  # only the main thread receives signals; an ignored Ctrl-C stays ignored
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)


class SiteWritten(KeyboardInterrupt):
    """Ctrl-C that came after the new site went live."""

    def __init__(self, docs: Path) -> None:
        super().__init__(str(docs))
        self.docs = docs


def interrupted_message(exc: KeyboardInterrupt) -> str:
    if isinstance(exc, SiteWritten):
        return f"interrupted after the new site was written: {exc.docs} holds the new reports"
    return "interrupted: nothing was changed, the previous site is as it was"


@contextmanager
def site_written(docs: Path) -> Iterator[None]:
    """Report a Ctrl-C inside the block as coming after the new site went live (it did)."""
    try:
        yield
    except SiteWritten:
        raise
    except KeyboardInterrupt:
        raise SiteWritten(docs) from None
