"""Progress on stderr: a bar on a terminal, nothing when piped or with --quiet."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")


class Progress:
    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr  # the stderr of now, not of the first import
        self.enabled = self.stream.isatty() if enabled is None else enabled

    def status(self, text: str) -> None:
        if self.enabled:
            self.stream.write(f"\r\033[K{text} …")
            self.stream.flush()

    def iterate(self, items: Iterable[T], label: str, total: int | None = None) -> Iterator[T]:
        if total is None:
            items = list(items)
            total = len(items)
        done = 0
        self._bar(label, 0, total)
        for item in items:
            yield item
            done += 1
            self._bar(label, done, total)
        if self.enabled:
            self.stream.write("\n")

    def _bar(self, label: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 24
        filled = width * done // max(total, 1)
        self.stream.write(f"\r\033[K{label:<28} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        self.stream.flush()
