"""Trace every variant (tests/variants/variants.py) and print the counts: correct variants with a red verdict or
none, bug variants named first with their form or not; with --verbose, each variant's verdicts that matter.

    .venv/bin/python tests/variants/measure.py [--verbose] [--only SUBSTRING]

Run from the worktree root; the variants are written under a temporary folder, never into the tree."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.variants.judge import judge  # noqa: E402
from tests.variants.variants import bug_variants, correct_variants  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    red, clean, named, missed = [], [], [], []
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="variants-") as folder:
        for index, variant in enumerate(v for v in correct_variants() + bug_variants() if args.only in v.id):
            began = time.time()
            judged = judge(variant.write(Path(folder) / str(index)))
            first = judged.first_failure
            bug = variant.bug
            if bug is None:
                ok = judged.error is None and first is None
                (clean if ok else red).append(variant.id)
                said = "0 red" if ok else f"RED {[f'{v.label} {v.form or v.status}' for v in judged.with_status('failed')]}"
            else:
                ok = first is not None and first.label == bug.first and first.form == bug.form
                (named if ok else missed).append(variant.id)
                said = (f"named first: {first.label} {first.form}" if ok else
                        f"NOT NAMED FIRST (expected {bug.first} {bug.form!r}): first "
                        f"{first.label + ' ' + repr(first.form) if first else None}")
            error = f" SCRIPT ERROR {judged.error}" if judged.error else ""
            print(f"{variant.id}: {said}{error} {judged.counts()} ({time.time() - began:.1f} s)", flush=True)
            if args.verbose or not ok:
                for v in judged.verdicts:
                    if v.status != "passed":
                        print(f"    {v.label} {v.status} {v.form}: {v.detail[:300]}")
    print(f"\ncorrect variants: {len(clean) + len(red)}, 0 red: {len(clean)}, red: {len(red)}")
    print(f"bug variants: {len(named) + len(missed)}, named first with their form: {len(named)}, not: {len(missed)}")
    print(f"({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
