"""The Benchmarks page's side-by-side section (benchmarks/compare.py): which figures it sets beside the baseline's,
what it calls slower, and the yardstick multiples against the 7× and 0.7× goals. Made-up numbers: nothing is timed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.compare import Checkout, Figure, flatten, medians, multiple, section, side_by_side  # noqa: E402

COLD = "every report + `mkdocs build`, from scratch (cold build)"
WARM = "warm regeneration in `serve`, until the new pages are served"


def measured(scale: float = 1.0, extra_step: bool = False) -> dict:
    """What benchmarks/compare.py's DRIVER writes for one checkout, every figure multiplied by ``scale``."""
    steps = {"vit: figures": 0.4 * scale, "gpt: pages": 0.1 * scale}
    if extra_step:
        steps["gpt: held-out score read back"] = 0.01
    return {
        "regeneration": {"cold total": 9.0 * scale, "cold build": 5.5 * scale, "mkdocs build": 3.5 * scale,
                         "fresh build": 5.8 * scale, "warm total": 8.0 * scale, "warm build": 4.4 * scale,
                         "import torch": 1.8 * scale, "import": 2.0 * scale, "steps": steps},
        "warm": {"warm": 0.8 * scale, "cold": 6.5 * scale, "warm settled": 1.1 * scale, "warm alone": 1.0 * scale,
                 "start": 4.0 * scale},
        "trace": [["vit_trace.py", 0.021 * scale, 0.024 * scale, 5.9 * scale, 3.6 * scale]],
    }


def test_every_regeneration_warm_and_trace_figure_is_named():
    figures = flatten(measured(extra_step=True))
    assert figures[COLD] == 9.0 and figures[WARM] == 0.8
    assert figures["&nbsp;&nbsp;vit: figures"] == 0.4
    assert figures["&nbsp;&nbsp;gpt: held-out score read back"] == 0.01
    assert figures["`vit_trace.py`: traced run"] == 0.024
    assert figures["`vit_trace.py`: whole `trace` command"] == 5.9


@pytest.mark.parametrize("baseline, current, slower", [
    (1.00, 1.05, False),    # within the repeats' spread
    (1.00, 1.20, True),
    (0.002, 0.004, False),  # twice as long, but 2 ms: under the logged times' rounding
    (0.020, 0.030, True),
    (1.00, 0.50, False),    # faster
    (None, 1.00, False),    # a figure the baseline does not have
])
def test_a_figure_is_slower_only_when_longer_beyond_the_noise(baseline, current, slower):
    assert Figure("x", baseline, current).slower is slower


def test_a_figure_only_one_side_has_is_kept_with_no_ratio():
    figures = side_by_side({"old": 1.0, "both": 2.0}, {"both": 2.0, "new": 3.0})
    assert [(f.name, f.ratio) for f in figures] == [("both", 1.0), ("new", None), ("old", None)]


def test_medians_are_taken_per_figure_over_the_rounds():
    assert medians([{"a": 1.0, "b": 5.0}, {"a": 3.0}, {"a": 2.0, "b": 7.0}]) == {"a": 2.0, "b": 6.0}


def test_multiples_say_how_far_from_the_goal():
    assert multiple(9.0, 1.0, 7.0) == "9.00× (+2.00× from 7×)"
    assert multiple(0.35, 0.5, 0.7) == "0.70× (+0.00× from 0.7×)"
    assert multiple(0.25, 0.5, 0.7) == "0.50× (-0.20× from 0.7×)"


def page(baseline_scale: float, current_scale: float) -> str:
    base, mine = Checkout("c36410f", Path("/b"), Path("/b/py")), Checkout("abc1234", Path("/c"), Path("/c/py"))
    return section(base, mine, flatten(measured(baseline_scale)), flatten(measured(current_scale)),
                   yardstick=0.5, rounds=3, load=(1.2, 1.4))


def test_the_section_gives_both_commits_the_yardstick_multiples_and_the_load():
    text = page(1.0, 1.0)
    assert text.startswith("## Side by side with the baseline\n")
    assert "c36410f" in text and "abc1234" in text and "load average was 1.2 at the start and 1.4" in text
    assert "| cold build: every report + `mkdocs build` | 18.00× (+11.00× from 7×) | 18.00× (+11.00× from 7×) | 7× |" \
        in text
    assert "| warm regeneration from the page (`serve`) | 1.60× (+0.90× from 0.7×) | 1.60× (+0.90× from 0.7×) | 0.7× |" \
        in text
    assert f"| {COLD} | 9.00 s | 9.00 s | 1.00× | no |" in text
    assert "| `vit_trace.py`: plain run | 21.0 ms | 21.0 ms | 1.00× | no |" in text
    assert "Nothing is slower than the baseline" in text


def test_the_section_names_what_got_slower():
    text = page(1.0, 1.25)
    assert f"| {COLD} | 9.00 s | 11.25 s | 1.25× | **yes** |" in text
    assert "Slower here" in text and "every report + `mkdocs build`, from scratch (cold build) (1.25×)" in text
    assert "Nothing is slower" not in text


def test_a_run_stopped_early_gives_the_rounds_both_checkouts_completed():
    from benchmarks.compare import section_from_record

    kept = {"baseline": "c36410f", "current": "abc1234", "load": [1.0, 2.0], "yardsticks": [0.5, 0.5, 0.5],
            "measured": {"baseline": [flatten(measured(1.0)), flatten(measured(3.0))],  # round 2 half done
                         "current": [flatten(measured(1.0))]}}
    text = section_from_record(kept)
    assert "1 round," in text and "Nothing is slower" in text  # the baseline's second round is left out


def test_the_driver_is_python_that_compiles():
    from benchmarks.compare import DRIVER

    compile(DRIVER, "driver", "exec")


def test_a_records_note_follows_the_first_paragraph():
    from benchmarks.compare import section_from_record

    kept = {"baseline": "c36410f", "current": "abc1234", "load": [1.0, 2.0], "yardsticks": [0.5],
            "measured": {"baseline": [flatten(measured())], "current": [flatten(measured())]},
            "note": "Both checkouts ran at the same time."}
    paragraphs = section_from_record(kept).split("\n\n")
    assert paragraphs[2] == "Both checkouts ran at the same time." and paragraphs[3].startswith("| as multiples")
