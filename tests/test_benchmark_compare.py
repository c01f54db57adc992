"""The Benchmarks page's side-by-side section (benchmarks/compare.py): which figures it sets beside the baseline's,
what it calls slower, and the yardstick multiples against the 7× and 0.7× goals. Made-up numbers: nothing is timed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.checkout import Checkout  # noqa: E402
from benchmarks import compare  # noqa: E402
from benchmarks.compare import Conditions, Figure, flatten, medians, multiple, section, side_by_side  # noqa: E402

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


QUIET = Conditions(yardsticks=[0.49, 0.5, 0.52], load=[1.2, 0.8, 1.4], cores=2)


def page(baseline_scale: float, current_scale: float, conditions: Conditions = QUIET) -> str:
    base, mine = Checkout("c36410f", Path("/b"), Path("/b/py")), Checkout("abc1234", Path("/c"), Path("/c/py"))
    return section(base, mine, flatten(measured(baseline_scale)), flatten(measured(current_scale)), rounds=3,
                   conditions=conditions)


def test_the_section_gives_both_commits_the_yardstick_multiples_and_the_load():
    text = page(1.0, 1.0)
    assert text.startswith("## Side by side with the baseline\n")
    assert "c36410f" in text and "abc1234" in text
    assert "`nice .venv/bin/python benchmarks/run.py --baseline c36410f --rounds 3`" in text  # how to measure again
    assert "The yardstick took 0.490 to 0.520 s (median 0.500 s, 3 timings)" in text
    assert "load average during the run (3 samples" in text and "2 cores): 0.8 to 1.4, median 1.2." in text
    assert "busy" not in text
    assert "| cold build: every report + `mkdocs build` | 18.00× (+11.00× from 7×) | 18.00× (+11.00× from 7×) | 7× |" \
        in text
    assert ("| warm regeneration from the page (`serve`) | 1.60× (+0.90× from 0.7×) | 1.60× (+0.90× from 0.7×) "
            "| 0.7× |") in text
    assert f"| {COLD} | 9.00 s | 9.00 s | 1.00× | no |" in text
    assert "| `vit_trace.py`: plain run | 21.0 ms | 21.0 ms | 1.00× | no |" in text
    assert "Nothing is slower than the baseline" in text


@pytest.mark.parametrize("conditions", [
    Conditions(yardsticks=[0.5, 0.5], load=[1.0, 9.5, 3.0], cores=2),   # load over the cores, part of the run
    Conditions(yardsticks=[0.5, 0.7], load=[1.0, 1.0], cores=2),        # the yardstick drifted 40%
])
def test_a_run_on_a_busy_machine_says_its_figures_are_not_an_answer(conditions):
    text = page(1.0, 1.0, conditions)
    assert "**The machine was busy**" in text and "Rerun on a quiet machine" in text


def test_the_load_is_sampled_while_a_measurement_runs(monkeypatch):
    import time

    from benchmarks import compare

    monkeypatch.setattr(compare, "LOAD_EVERY_S", 0.01)
    samples: list[float] = []
    with compare.load_samples(samples):
        time.sleep(0.2)
    assert len(samples) >= 3 and all(s >= 0 for s in samples)


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


@pytest.fixture
def verbose_build_log(capsys) -> str:
    """Step lines as `transformer_trace build --verbose` writes them: through the CLI's own log handler, with the
    messages of generator/build.py and the GPT's held-out score."""
    import logging

    from transformer_trace import cli

    root, logger = logging.getLogger(), logging.getLogger("transformer_trace")
    handlers, level = list(root.handlers), logger.level
    cli._log_to_stderr()
    logger.setLevel(logging.INFO)
    try:
        logger.info("%s: forward pass on %s recorded %d tensors in %.2f s", "vit", "cpu", 46, 1.25)
        logger.info("%s: %d pages, %d checks passed, in %.2f s", "vit", 26, 26, 0.5)
        logger.info("gpt: held-out score read back (measured before for these weights) in %.2f s", 0.01)
        logger.info("%s: %d of %d figures drawn (the others unchanged) in %.2f s", "vit", 30, 30, 2.0)
    finally:
        root.handlers[:], logger.level = handlers, level
    return capsys.readouterr().err


def test_the_step_rows_are_read_from_the_build_log_the_cli_writes(verbose_build_log):
    from benchmarks.measure import build_steps

    steps: dict[str, list[float]] = {}
    build_steps(verbose_build_log, steps)
    assert steps == {"vit: forward pass": [1.25], "vit: pages": [0.5], "gpt: held-out score read back": [0.01],
                     "vit: figures": [2.0]}


def test_both_checkouts_step_rows_come_from_their_logs_read_here(verbose_build_log):
    driver_wrote = measured()
    driver_wrote["regeneration"] = {**driver_wrote["regeneration"], "log": verbose_build_log}
    del driver_wrote["regeneration"]["steps"]
    figures = flatten(driver_wrote)
    assert figures["&nbsp;&nbsp;vit: forward pass"] == 1.25 and figures["&nbsp;&nbsp;vit: figures"] == 2.0
    assert figures["&nbsp;&nbsp;gpt: held-out score read back"] == 0.01


def test_the_driver_is_python_that_compiles():
    from benchmarks.compare import DRIVER

    compile(DRIVER, "driver", "exec")


def test_a_records_note_follows_the_first_paragraph():
    from benchmarks.compare import section_from_record

    kept = {"baseline": "c36410f", "current": "abc1234", "load": [1.0, 2.0], "yardsticks": [0.5],
            "measured": {"baseline": [flatten(measured())], "current": [flatten(measured())]},
            "note": "Both checkouts ran at the same time."}
    paragraphs = section_from_record(kept).split("\n\n")
    assert paragraphs[2].startswith("The yardstick took") and paragraphs[3] == "Both checkouts ran at the same time."
    assert paragraphs[4].startswith("| as multiples")


def test_a_baseline_given_as_a_commit_runs_its_own_sources_and_is_removed_after():
    import subprocess

    from benchmarks.checkout import BaselineCheckout

    with BaselineCheckout("HEAD") as baseline:
        code = "import transformer_trace.models as m; print(m.__file__)"
        imported = subprocess.run([str(baseline.python), "-c", code], capture_output=True, text=True, cwd="/",
                                  check=True).stdout.strip()
        assert Path(imported) == baseline.root / "models" / "__init__.py"
        assert baseline.label == subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                text=True, check=True).stdout.strip()
    assert not baseline.root.exists()
    assert str(baseline.root) not in subprocess.run(["git", "worktree", "list"], capture_output=True, text=True).stdout


def with_corpus(scale: float, traced_cpu: float) -> dict:
    """A measurement with two corpus drivers: (name, plain wall, traced wall, plain CPU, traced CPU, idle CPU)."""
    found = measured(scale)
    found["corpus"] = [["karpathy_nanoGPT/trace_driver.py", 0.006, 0.008, 0.005, traced_cpu, 0.0065],
                       ["pbloem_former/trace_driver.py", 0.006, 0.0075, 0.005, 0.0065, 0.0064]]
    return found


def test_the_corpus_overhead_is_set_beside_the_baselines_per_driver():
    text = section(Checkout("c36410f", Path("/b"), Path("/b/py")), Checkout("abc1234", Path("/c"), Path("/c/py")),
                   flatten(with_corpus(1.0, 0.0065)), flatten(with_corpus(1.0, 0.0075)), rounds=1, conditions=QUIET)
    assert "| `karpathy_nanoGPT/trace_driver.py` | 1.30× | 1.50× | **yes** |" in text
    assert "| `pbloem_former/trace_driver.py` | 1.30× | 1.30× | no |" in text
    assert "The overhead is worse (over 10% higher) for 1 of 2 drivers: `karpathy_nanoGPT/trace_driver.py`." in text
    assert "`karpathy_nanoGPT/trace_driver.py`: corpus driver, traced run (CPU) | 6.5 ms | 7.5 ms |" in text


def test_a_measurement_without_the_corpus_gives_no_corpus_table():
    assert "corpus driver: tracing overhead" not in page(1.0, 1.0) and page(1.0, 1.0).endswith(".\n\n")


def test_every_measured_process_may_keep_its_compiled_modules(monkeypatch, tmp_path):
    """benchmarks/run.py measures processes as a user's interpreter runs them: an environment's
    PYTHONDONTWRITEBYTECODE (each process compiling the project's modules again) is not passed on."""
    import os

    from benchmarks import compare, run

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(sys, "argv", ["run.py", "--record", str(tmp_path / "record.json"), "--out",
                                      str(tmp_path / "benchmarks.md")])
    (tmp_path / "record.json").write_text("{}", encoding="utf-8")
    monkeypatch.setattr(compare, "section_from_record", lambda record: "")
    monkeypatch.setattr(run, "replace_section", lambda out, text: None)
    run.main()
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ


@pytest.mark.parametrize("processes", [False, True])
def test_both_checkouts_traced_and_plain_runs_are_measured_on_one_intra_op_thread(monkeypatch, processes):
    """The driver each checkout runs (whatever its own benchmarks/ do) measures the examples' runs in its process and
    the corpus drivers' in new ones with PyTorch on the script's thread alone; its settings are back afterwards.
    With worker threads, a busy machine's spinning for them counted as the plain runs' CPU (unfair between the two)."""
    import os

    import torch

    from benchmarks.compare import ONE_INTRA_OP_THREAD

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    namespace = {"os": os}
    exec(compile(ONE_INTRA_OP_THREAD, "driver", "exec"), namespace)  # noqa: S102 - the driver's own text
    threads = torch.get_num_threads()
    seen = namespace["one_intra_op_thread"](lambda repeats: (torch.get_num_threads(), os.environ["OMP_NUM_THREADS"],
                                                            repeats), 5, processes=processes)
    assert seen == (1, "1" if processes else "2", 5)
    assert torch.get_num_threads() == threads and os.environ["OMP_NUM_THREADS"] == "2"


def test_the_driver_measures_the_trace_and_the_corpus_on_one_intra_op_thread():
    from benchmarks.compare import CORPUS_MEASURE, DRIVER, ONE_INTRA_OP_THREAD

    assert ONE_INTRA_OP_THREAD in DRIVER and CORPUS_MEASURE in DRIVER
    compile(DRIVER, "driver", "exec")
    assert "one_intra_op_thread(run.bench_trace, 3, processes=False)" in DRIVER
    assert "one_intra_op_thread(corpus_rows, CORPUS_REPEATS, processes=True)" in DRIVER


@pytest.mark.parametrize("torch_ratio, verdict", [
    (1.3, "No figure is slower by more than the controls moved."),  # identical code moved 1.3×: 1.25× is the machine
    (1.0, f"Slower beyond it: {COLD} (1.25×)."),
])
def test_a_figure_is_shown_slower_only_beyond_what_the_run_did_to_identical_code(torch_ratio, verdict):
    """`import torch` and the plain runs run the same code on both checkouts: the spread of their ratios is the
    machine's, and only a figure slower than that is evidence."""
    figures = [Figure(COLD, 9.0, 11.25), Figure("`import torch`", 2.0, 2.0 * torch_ratio),
               Figure("`vit_trace.py`: plain run", 0.05, 0.05)]
    line = compare.controls_line(figures)
    assert "The controls, 2 figures of the same code on both checkouts" in line
    assert f"came out 1.00× to {max(torch_ratio, 1.0):.2f}× here" in line and line.endswith(verdict)
    assert compare.controls_line([Figure(COLD, 9.0, 11.25)]) == ""  # no control measured: nothing said


def test_a_report_s_figures_row_slower_only_by_the_one_pool_s_start_is_said_so_beside_every_report_s_figures():
    base, mine = measured(), measured()
    base["regeneration"]["steps"] = {"encoder-decoder: figures": 0.31, "vit: figures": 0.37, "gpt: figures": 0.47}
    mine["regeneration"]["steps"] = {"encoder-decoder: figures": 0.38, "vit: figures": 0.13, "gpt: figures": 0.23}
    figures = side_by_side(flatten(base), flatten(mine))
    total = next(f for f in figures if f.name.endswith(compare.EVERY_REPORTS_FIGURES))
    assert total.baseline == pytest.approx(1.15) and total.current == pytest.approx(0.74) and not total.slower
    line = compare.figure_rows_line(figures)
    assert line.startswith("encoder-decoder: figures: a part") and "(0.64×)" in line
    mine["regeneration"]["steps"]["vit: figures"] = 0.9  # every report's together slower too: no excuse is made
    assert compare.figure_rows_line(side_by_side(flatten(base), flatten(mine))) == ""
