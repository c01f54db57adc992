"""Index expressions of the catalogue ('[0, 0, :10]') as Python indices."""

from __future__ import annotations


def parse_index(index: str) -> tuple[int | slice, ...]:
    """'[0, 0, :10]' -> (0, 0, slice(None, 10)); integers and simple slices only."""
    parts: list[int | slice] = []
    for part in index.strip()[1:-1].split(","):
        part = part.strip()
        if ":" in part:
            start, stop = (int(x) if x.strip() else None for x in part.split(":"))
            parts.append(slice(start, stop))
        else:
            parts.append(int(part))
    return tuple(parts)
