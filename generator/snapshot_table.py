"""`python -m transformer_trace list [REPORT]`: what a student can mark, before writing a marker — every snapshot's
marker, name, the variable the catalogue calls it and the named shape it expects, with what the shape's letters mean.

The catalogues live with their models (PyTorch), so the table is read from snapshot_table.json beside this module,
written from the registry's catalogues by ``table_of`` (`python scripts/write_snapshot_table.py`;
tests/test_snapshot_table.py fails when the file and the catalogues differ). Listing therefore imports no PyTorch.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().with_name("snapshot_table.json")
HEADER = ("marker", "snapshot", "variable", "shape")


def table_of(reports: Mapping[str, Any]) -> dict[str, Any]:
    """The table of every report that can be traced (those with a ``trace`` spec), from its catalogue: the marker of
    each snapshot, its title, variable and named shape (the catalogue's own, else the model's declared record point),
    and the shape legend."""
    from transformer_trace.trace import traceable
    from transformer_trace.trace.reading.declared import named_shapes

    found = {}
    for key, report in traceable(reports).items():
        options = report.run_options()
        shapes = named_shapes(report, options.places(), options.record_points())
        found[key] = {
            "title": report.short_title,
            "snapshots": [{"marker": report.trace_spec.marker(s.number, report.label(s.number)), "title": s.title,
                           "variable": s.variable, "shape": list(shapes[s.number][0] or ())}
                          for s in report.snapshots],
            "legend": dict(report.dims_legend.items()),
        }
    return found


def read_table() -> dict[str, Any]:
    return json.loads(TABLE.read_text(encoding="utf-8"))


def listing(table: Mapping[str, Any], key: str | None = None) -> list[str]:
    """The lines `list` prints: per report a heading, an aligned table and the shape legend."""
    lines: list[str] = []
    for name, report in table.items():
        if key is not None and name != key:
            continue
        rows = [HEADER, *((s["marker"], s["title"], s["variable"], f"({', '.join(s['shape'])})")
                          for s in report["snapshots"])]
        widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER) - 1)]
        lines += [*([""] if lines else []), f"{report['title']} ({name}): {len(rows) - 1} snapshots"]
        lines += ["  " + "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip()
                  for row in rows]
        letters = max(map(len, report["legend"]), default=0)
        lines += ["  shape letters:", *(f"    {letter.ljust(letters)}  {meaning}"
                                       for letter, meaning in report["legend"].items())]
    return lines


def add_parser(sub: argparse._SubParsersAction, table: Mapping[str, Any]) -> None:
    c = sub.add_parser(
        "list", help="what to mark: every snapshot's marker, name, variable and expected shape",
        description="Print every snapshot a traced script can mark: its marker comment (put it on the line that "
        "computes the value), its name, the variable the catalogue calls it and the named shape it expects, with what "
        "the shape's letters mean.",
        epilog="example:\n  python -m transformer_trace list vit",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("report", nargs="?", choices=tuple(table), default=None,
                   help=f"one catalogue: {', '.join(table)} (default: all)")
    c.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")


def list_command(args: argparse.Namespace) -> int:
    print("\n".join(listing(read_table(), args.report)))
    return 0
