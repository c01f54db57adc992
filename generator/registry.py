"""An explicit registry: named entries added by a call, never by importing a module; a second entry under a taken name
is refused."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Entries by name, in the order added. ``what`` names the kind of entry in error messages ("check", "drawing")."""

    def __init__(self, what: str, entries: Iterable[tuple[str, T]] = ()) -> None:
        self.what = what
        self._entries: dict[str, T] = {}
        for name, entry in entries:
            self.add(name, entry)

    def add(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"two {self.what}s are named {name!r}: {self._entries[name]!r} and {entry!r}; rename one")
        self._entries[name] = entry
        return entry

    def merged(self, *others: Registry[T]) -> Registry[T]:
        """A new registry with this one's entries, then the others'; a name in two of them is refused."""
        return Registry(self.what, [item for registry in (self, *others) for item in registry.items()])

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"no {self.what} named {name!r}; known: {', '.join(self._entries) or 'none'}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {list(self._entries)})"
