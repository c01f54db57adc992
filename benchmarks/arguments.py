"""benchmarks/run.py's command line."""

from __future__ import annotations

import argparse
from pathlib import Path


def arguments(doc: str | None, root: Path) -> argparse.ArgumentParser:
    """benchmarks/run.py's command line (``doc``: its description; ``root``: the checkout)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=root / "docs" / "benchmarks.md")
    parser.add_argument(
        "--only",
        choices=("warm", "limits", "plugin", "training", "gpt-weights", "trace", "corpus", "corpus-work",
                 "classroom", "gpu"),
        help="measure only this part and replace its section of --out",
    )
    parser.add_argument("--baseline", help="a commit, or another checkout's folder (the commit this work started "
                        "from): measure "
                        "both side by side with a yardstick and replace that section of --out (benchmarks/compare.py)")
    parser.add_argument("--baseline-python", type=Path, help="its interpreter (default BASELINE/.venv/bin/python)")
    parser.add_argument("--rounds", type=int, default=3, help="with --baseline: rounds measuring both checkouts "
                        "(with --only corpus: the corpus drivers alone, its own section: benchmarks/corpus_compare.py)")
    parser.add_argument("--record", type=Path, help="with --baseline: keep each measurement in this JSON file; "
                        "alone: write the side-by-side section from the rounds it holds")
    return parser
