"""Trace every variant (tests/variants/variants.py) and print the counts: correct variants with a red verdict or
none, bug variants named first with their form or not; each variant's failures where it went wrong and its
unrecognised steps (a form `trace` does not know: not red, but counted), with --verbose its other verdicts too.

    .venv/bin/python tests/variants/measure.py [--verbose] [--only PART_OF_ID ...] [--jobs 2]

Run from the worktree root; the variants are written under a temporary folder, never into the tree."""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.variants.judge import Judged, judge  # noqa: E402
from tests.variants.rewrites import Variant  # noqa: E402
from tests.variants.variants import bug_variants, correct_variants  # noqa: E402


def verdict_line(variant: Variant, judged: Judged) -> tuple[bool, str]:
    """Whether the variant came out as it must (no red; its bug named first with its form), and that in words."""
    first, bug = judged.first_failure, variant.bug
    if bug is None:
        ok = judged.error is None and first is None
        failed = ", ".join(f"{v.label} {v.form or v.status}" for v in judged.with_status("failed"))
        said = "0 red" if ok else f"RED: {failed}"
    else:
        ok = first is not None and (first.label, first.form) == (bug.first, bug.form)
        said = (f"named first: {bug.first} {bug.form!r}" if ok else f"NOT NAMED FIRST (expected {bug.first} "
                f"{bug.form!r}): first {first.label + ' ' + repr(first.form) if first else None}")
    error = f"; the script failed: {judged.error}" if judged.error else ""
    return ok, f"{variant.id}: {said}{error} {judged.counts()}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--only", action="append", default=[], help="a part of the variants' ids (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    variants = [v for v in correct_variants() + bug_variants()
                if not args.only or any(part in v.id for part in args.only)]
    outcomes: dict[str, list[str]] = {"clean": [], "red": [], "named": [], "missed": []}
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="variants-") as folder, ProcessPoolExecutor(
            args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        paths = [variant.write(Path(folder) / str(index)) for index, variant in enumerate(variants)]
        for variant, judged in zip(variants, pool.map(judge, paths)):
            ok, line = verdict_line(variant, judged)
            print(line, flush=True)
            kind = ("named" if ok else "missed") if variant.bug else ("clean" if ok else "red")
            outcomes[kind].append(variant.id)
            for v in judged.verdicts:  # where it went wrong, and what no form matched
                if (v.status == "unrecognised" or (v.status == "failed" and not ok)
                        or (args.verbose and v.status != "passed")):
                    print(f"    {v.label} {v.status} {v.form}: {v.detail[:400]}")
    print(f"\ncorrect variants: {len(outcomes['clean']) + len(outcomes['red'])}, 0 red: {len(outcomes['clean'])}, "
          f"red: {len(outcomes['red'])} {outcomes['red']}")
    print(f"bug variants: {len(outcomes['named']) + len(outcomes['missed'])}, named first with their form: "
          f"{len(outcomes['named'])}, not: {len(outcomes['missed'])} {outcomes['missed']}")
    print(f"({time.time() - started:.0f} s, {args.jobs} at a time)")


if __name__ == "__main__":
    main()
