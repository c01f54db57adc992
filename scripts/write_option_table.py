"""Write generator/option_table.py's option_table.json from the registry: the flags `build` and `train` parse.
Run after changing a report's options (a flag, its help, choices or default, or a model configuration's default);
tests/test_option_table.py fails while the file and the registry differ."""

from __future__ import annotations

import json

from transformer_trace.option_table import TABLE, table_of
from transformer_trace.reports import REPORTS


def main() -> None:
    TABLE.write_text(json.dumps(table_of(REPORTS), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {TABLE}")


if __name__ == "__main__":
    main()
