"""The corpus drivers' tracing overhead alone beside the baseline's (benchmarks/corpus_compare.py, `benchmarks/run.py
--baseline COMMIT --only corpus`): each checkout runs only its own corpus measurement, and the page's section "Tracing
overhead side by side" sets each driver's overhead beside the baseline's. Made-up numbers: nothing is timed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import compare, corpus_compare, run  # noqa: E402
from benchmarks.checkout import Checkout  # noqa: E402

NANO, FORMER = "karpathy_nanoGPT/trace_driver.py", "pbloem_former/trace_driver.py"


def corpus_rows(nano_traced_cpu: float) -> list[list]:
    """What benchmarks/corpus.py's bench_corpus gives: (name, plain wall, traced wall, plain CPU, traced CPU, idle)."""
    return [[NANO, 0.006, 0.008, 0.005, nano_traced_cpu, 0.0065], [FORMER, 0.006, 0.0075, 0.005, 0.0065, 0.0064]]


def record(nano_traced_cpu: dict[str, float], rounds: int = 1) -> dict:
    """A corpus-only side-by-side record, its rounds measuring nanoGPT's traced run at these CPU seconds per side."""
    measured = {side: [compare.corpus_figures({"corpus": corpus_rows(cpu)})] * rounds
                for side, cpu in nano_traced_cpu.items()}
    return {"baseline": "c36410f", "current": "abc1234", "load": [0.8, 1.1], "cores": 2,
            "yardsticks": [0.5, 0.51, 0.5, 0.52], "measured": measured, "parts": "corpus"}


@pytest.mark.parametrize("baseline_cpu, current_cpu, row, verdict", [
    (0.0065, 0.0065, f"| `{NANO}` | 1.30× | 1.30× | no |", "not worse by over 10% for any of the 2 drivers"),
    (0.0065, 0.0080, f"| `{NANO}` | 1.30× | 1.60× | **yes** |", f"worse (over 10% higher) for 1 of 2 drivers: `{NANO}`"),
])
def test_a_corpus_record_gives_each_driver_s_overhead_beside_the_baseline_s(baseline_cpu, current_cpu, row, verdict):
    text = compare.section_from_record(record({"baseline": baseline_cpu, "current": current_cpu}))
    assert text.startswith(corpus_compare.TITLE + "\n")
    assert "## Side by side with the baseline" not in text  # the whole comparison's section is left as it is
    assert row in text and f"| `{FORMER}` | 1.30× | 1.30× | no |" in text and verdict in text
    assert "--baseline c36410f --only corpus --rounds 3" in text and "1-minute load average" in text
    within = 2 if current_cpu / 0.005 <= 1.5 else 1
    assert f"On this commit {within} of 2 drivers are traced within 1.5× of their own run (CPU)." in text


def corpus_json(traced_cpu: float, hits: list[int]) -> str:
    """What a checkout's `benchmarks/corpus.py DRIVER REPEATS` prints: (wall, CPU) per run of each kind, hits."""
    return json.dumps({"plain": [[0.006, 0.005], [0.007, 0.0055]], "traced": [[0.008, traced_cpu], [0.009, 0.009]],
                       "idle": [[0.007, 0.0065], [0.007, 0.007]], "hits": hits})


@pytest.mark.parametrize("driver_text", [corpus_compare.CORPUS_DRIVER, compare.CORPUS_MEASURE])
def test_both_checkouts_measure_each_driver_with_their_own_corpus_py_and_the_same_repeats(monkeypatch, tmp_path,
                                                                                            driver_text):
    """The text each checkout's interpreter runs: each driver by the checkout's own benchmarks/corpus.py (PyTorch on
    one intra-op thread), CORPUS_REPEATS repeats, FEW_REPEATS for a driver whose run takes seconds; the minimum of
    each kind is its row, as bench_corpus makes it."""
    from benchmarks import corpus

    asked = []

    def fake_run(command, **_):
        import torch

        asked.append((Path(command[1]).name, corpus.driver_name(Path(command[2])), int(command[3]),
                      torch.get_num_threads()))
        return subprocess.CompletedProcess(command, 0, "noise\n" + corpus_json(0.0068, [7, 7]), "")

    drivers = [corpus.CORPUS / NANO, corpus.CORPUS / compare.SLOW_DRIVERS[0]]
    monkeypatch.setattr(corpus, "drivers", lambda: drivers)
    monkeypatch.setattr(subprocess, "run", fake_run)
    namespace = {}
    if driver_text is corpus_compare.CORPUS_DRIVER:
        out = tmp_path / "measured.json"
        monkeypatch.setattr(sys, "argv", ["driver", str(out)])
        exec(compile(driver_text, "driver", "exec"), namespace)  # noqa: S102 - the driver's own text
        rows = json.loads(out.read_text(encoding="utf-8"))["corpus"]
        assert [threads for *_, threads in asked] == [1, 1]
    else:
        exec(compile("import json, os, sys\n" + driver_text, "driver", "exec"), namespace)  # noqa: S102
        rows = namespace["corpus_rows"](compare.CORPUS_REPEATS)
    assert [row[:3] for row in asked] == [("corpus.py", NANO, compare.CORPUS_REPEATS),
                                          ("corpus.py", compare.SLOW_DRIVERS[0], compare.FEW_REPEATS)]
    assert [list(row) for row in rows][0] == [NANO, 0.006, 0.008, 0.005, 0.0068, 0.0065]


@pytest.mark.parametrize("hits", [[], [0, 0], [7, 6]])
def test_a_driver_whose_traced_runs_captured_nothing_or_differently_stops_the_measurement(monkeypatch, hits):
    from benchmarks import corpus

    monkeypatch.setattr(corpus, "drivers", lambda: [corpus.CORPUS / NANO])
    monkeypatch.setattr(subprocess, "run", lambda command, **_: subprocess.CompletedProcess(
        command, 0, corpus_json(0.007, hits), ""))
    namespace = {}
    exec(compile("import json, os, sys\n" + compare.CORPUS_MEASURE, "driver", "exec"), namespace)  # noqa: S102
    with pytest.raises(RuntimeError, match=f"{NANO}: the traced runs captured"):
        namespace["corpus_rows"](compare.CORPUS_REPEATS)


@pytest.mark.parametrize("parts, driver", [("corpus", corpus_compare.CORPUS_DRIVER), ("all", compare.DRIVER)])
def test_each_checkout_runs_the_driver_of_the_parts_measured(monkeypatch, tmp_path, parts, driver):
    ran = []

    def fake_run(command, cwd, **_):
        ran.append((command[0], command[2], cwd))
        rows = {"corpus": corpus_rows(0.007)} if parts == "corpus" else {}
        Path(command[3]).write_text(json.dumps(rows), encoding="utf-8")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(compare.subprocess, "run", fake_run)
    monkeypatch.setattr(compare, "flatten", lambda measured: {"all": 1.0})
    figures = compare.measure(Checkout("c36410f", tmp_path, tmp_path / "python"), parts)
    assert ran == [(str(tmp_path / "python"), driver, tmp_path)]
    assert figures == ({"all": 1.0} if parts == "all" else compare.corpus_figures({"corpus": corpus_rows(0.007)}))


@pytest.mark.parametrize("only, parts", [("corpus", "corpus"), (None, "all")])
def test_run_with_a_baseline_and_only_corpus_compares_the_corpus_alone(monkeypatch, tmp_path, only, parts):
    from benchmarks import checkout

    class Baseline:
        def __init__(self, where: str, python: Path | None) -> None:
            self.where = where

        def __enter__(self) -> Checkout:
            return Checkout(self.where, tmp_path, tmp_path / "python")

        def __exit__(self, *exc: object) -> None:
            pass

    asked, written = [], []
    monkeypatch.setattr(checkout, "BaselineCheckout", Baseline)
    monkeypatch.setattr(compare, "compare", lambda base, current, rounds, kept, parts: asked.append(
        (base.label, rounds, parts)) or f"## section of {parts}\n")
    monkeypatch.setattr(run, "replace_section", lambda out, text: written.append((out, text)))
    out = tmp_path / "benchmarks.md"
    monkeypatch.setattr(sys, "argv", ["run.py", "--baseline", "c36410f", "--rounds", "2", "--out", str(out),
                                      *(["--only", only] if only else [])])
    run.main()
    assert asked == [("c36410f", 2, parts)] and written == [(out, f"## section of {parts}\n")]
