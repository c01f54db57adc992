"""Write generator/snapshot_table.json from the registry's catalogues: what `python -m transformer_trace list` prints.
Run after changing a catalogue; tests/test_snapshot_table.py fails while the file and the catalogues differ."""

from __future__ import annotations

import json

from transformer_trace.reports import REPORTS
from transformer_trace.snapshot_table import TABLE, table_of


def main() -> None:
    TABLE.write_text(json.dumps(table_of(REPORTS), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {TABLE}")


if __name__ == "__main__":
    main()
