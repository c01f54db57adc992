"""The tracer's work counted beside the baseline's (benchmarks/corpus_work.py, `benchmarks/run.py --baseline COMMIT
--only corpus-work`): counts, not timings, so the same run gives the same numbers; a driver does more work where a
count grew by over 10 % (and a floor), and the page's section says which."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks import corpus_work  # noqa: E402

SMALLEST = ROOT / "tests" / "trace_corpus" / "seed_002_single_head_vit" / "trace_driver.py"


def counts(calls: int, copied: int = 100_000, hits: int = 30) -> dict[str, int]:
    return {"python calls": calls, "torch ops": 20, "elements produced": 5000, "bytes copied": copied,
            "bytes kept": 2 * copied, "hits": hits}


@pytest.mark.parametrize("mine, more", [
    (counts(3000), []),
    (counts(3250), []),  # +8 %: within the margin
    (counts(3400), ["python calls"]),
    (counts(3000, copied=104_000), []),  # +4 %
    (counts(3000, copied=150_000), ["bytes copied", "bytes kept"]),
])
def test_a_driver_does_more_work_where_a_count_grew_by_over_ten_percent(mine, more):
    assert corpus_work.more_work(counts(3000), mine) == more


def test_the_section_sets_each_driver_s_counts_beside_the_baseline_s_and_names_those_that_grew():
    base = {"a/trace_driver.py": counts(3000), "b/trace_driver.py": counts(3000)}
    mine = {"a/trace_driver.py": counts(2500), "b/trace_driver.py": counts(4000, hits=31)}
    text = corpus_work.work_section("c36410f", "abc1234", base, mine)
    assert text.startswith("## Tracing work side by side (counted)\n")
    assert "| `a/trace_driver.py` | 30 | 3,000 → 2,500 |" in text and text.count("| no |") == 1
    assert "| `b/trace_driver.py` | 30 → 31 | 3,000 → 4,000 |" in text and "| **yes** |" in text
    assert "for 1 of 2 drivers: `b/trace_driver.py` (python calls)" in text
    same = corpus_work.work_section("c36410f", "abc1234", base, base)
    assert "No driver does more work" in same


def test_a_driver_counted_twice_gives_the_same_counts():
    """What makes counts a fairer judge than timings on a shared machine: they do not move between runs."""
    def count() -> str:
        return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "corpus_work.py"), str(SMALLEST)], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]

    first = count()
    assert first == count()
    assert '"hits": 0' not in first and '"python calls": ' in first
