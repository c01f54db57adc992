"""The corpus drivers' tracing overhead alone, side by side with the baseline (issues 39 and 40: not worse than the
baseline's, within 1.5×), in about ten minutes instead of the whole comparison's thirty-five:

    .venv/bin/python benchmarks/run.py --baseline c36410f --only corpus --rounds 3

As benchmarks/compare.py measures everything: both checkouts in alternating rounds, each with its own
benchmarks/corpus.py in its own interpreter, PyTorch on one intra-op thread, the yardstick timed before and after each
measurement and the load sampled throughout; the page's section "Tracing overhead side by side" is replaced, the
full comparison's section is left as it is.
"""

from __future__ import annotations

from benchmarks.checkout import Checkout
from benchmarks.compare import (CORPUS_MEASURE, CORPUS_REPEATS, FEW_REPEATS, ONE_INTRA_OP_THREAD, Conditions,
                                corpus_lines, corpus_overheads)
from benchmarks.corpus import LIMIT

TITLE = "## Tracing overhead side by side"

# Run in a checkout's own interpreter, from its root, to a JSON file: each driver measured by its own
# benchmarks/corpus.py, with the repeats the whole comparison passes both checkouts (compare.CORPUS_MEASURE).
CORPUS_DRIVER = f"""
import json, os, sys
sys.path.insert(0, ".")
{ONE_INTRA_OP_THREAD}
{CORPUS_MEASURE}
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump({{"corpus": one_intra_op_thread(corpus_rows, CORPUS_REPEATS, processes=True)}}, out)
"""


def corpus_section(baseline: Checkout, current: Checkout, base: dict[str, float], mine: dict[str, float],
                   rounds: int, conditions: Conditions) -> str:
    """The page's section: the run and the machine's load, each driver's overhead on both checkouts, the verdicts."""
    overheads = corpus_overheads(mine)
    within = sum(ratio <= LIMIT for ratio in overheads.values())
    lines = [
        TITLE, "",
        f"This commit ({current.label}) and the commit this work started from ({baseline.label}, a worktree of it with "
        f"its own code): the corpus drivers' tracing overhead alone (traced CPU ÷ plain CPU of the script's thread, "
        f"each the minimum of {CORPUS_REPEATS} interleaved runs per driver, {FEW_REPEATS} for one whose run takes "
        f"seconds, both checkouts alike, benchmarks/corpus.py), measured by "
        f"`benchmarks/run.py --baseline --only corpus` in one run: {rounds} round{'s' if rounds != 1 else ''}, each "
        "measuring both checkouts in turn (the first alternating); medians over the rounds. To measure again, on a "
        f"quiet machine: `nice .venv/bin/python benchmarks/run.py --baseline {baseline.label} --only corpus "
        f"--rounds 3`.", "",
        conditions.paragraph(), "",
        *corpus_lines(base, mine),
        f"On this commit {within} of {len(overheads)} drivers are traced within {LIMIT}× of their own run (CPU)."
        if overheads else "No driver was measured on this commit.",
    ]
    return "\n".join(lines).rstrip("\n") + "\n\n"
