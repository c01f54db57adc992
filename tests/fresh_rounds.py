"""What the test files of the fresh-implementation rounds share (tests/test_trace_fresh*.py, one or two files a round).

A round's folders are in two places: ours in tests/trace_fresh/round<N>/<owner>_<repo>/ (SOURCE.md, driver.py,
planted_bugs.json, markers.json, upstream.json and our stubs: never upstream code), and the folder `measure.py` measured,
upstream files beside ours, outside the repository ($TRACE_FRESH_ROUND<N>, by default /work/fresh_round<N>/<folder>).
A test that needs upstream code asks for it through ``upstream_driver`` and is skipped where it is absent (CI).

- ``ours(round_number)``: the round's folder of our files.
- ``our_files_only(round_number, names, stubs=())``: assert each named folder holds our files only (the stub folders or
  files named besides); the number of bugs their planted_bugs.json plant.
- ``upstream_driver`` (a fixture): ``upstream_driver(round_number, name)`` is the driver of the folder measured, the test
  skipped where it is not on this machine; its planted_bugs.json must be ours.
- ``traced(driver, out, status=0)``: trace ``driver`` as the CLI does into ``out``, expecting exit ``status``; the
  "snapshots" of its snapshots.json (``trace_report``: the whole file).
- ``with_bug(tmp_path, folder, bug)``: a copy of ``folder`` with one planted bug's text replacement made; its driver.
- ``red_and_passed(snapshots)``: the details of the captured steps that failed, by label, and how many passed.
- ``assert_no_red_verdict(driver, out, passed_at_least)``: trace a correct driver; no step red, and at least that many
  checks passed (the checks really ran).

A round's "correct code gets no red verdict" test is then::

    @pytest.mark.slow
    @pytest.mark.parametrize("name", FOLDERS)
    def test_round_nine_correct_code_gets_no_red_verdict(tmp_path, upstream_driver, name):
        assert_no_red_verdict(upstream_driver(9, name), tmp_path / "out", PASSED_AT_LEAST[name])
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from transformer_trace.cli import main

FRESH = Path(__file__).resolve().parent / "trace_fresh"
OUR_FILES = {"SOURCE.md", "driver.py", "planted_bugs.json", "markers.json", "upstream.json"}


def ours(round_number: int) -> Path:
    return FRESH / f"round{round_number}"


def upstream(round_number: int) -> Path:
    """Where round ``round_number``'s folders with their upstream files are: $TRACE_FRESH_ROUND<N>, else
    /work/fresh_round<N>."""
    return Path(os.environ.get(f"TRACE_FRESH_ROUND{round_number}", f"/work/fresh_round{round_number}"))


def driver_of(folder: Path) -> Path:
    notebook = folder / "driver.ipynb"
    return notebook if notebook.exists() else folder / "driver.py"


def planted_bugs(folder: Path) -> list[dict]:
    return json.loads((folder / "planted_bugs.json").read_text(encoding="utf-8"))


def our_files_only(round_number: int, names: Iterable[str], stubs: Iterable[str] = ()) -> int:
    """Assert that each of round ``round_number``'s folders ``names`` holds our files only (and the ``stubs`` named);
    the number of bugs they plant, all together."""
    planted = 0
    for name in names:
        folder = ours(round_number) / name
        assert {p.name for p in folder.iterdir()} - set(stubs) == OUR_FILES, name
        planted += len(planted_bugs(folder))
    return planted


@pytest.fixture
def upstream_driver() -> Callable[[int, str], Path]:
    """``upstream_driver(round_number, name)``: the driver of the folder measured (upstream files beside ours), the
    test skipped where it is not on this machine; its planted_bugs.json must be ours."""
    def driver(round_number: int, name: str) -> Path:
        folder = upstream(round_number) / name
        if not driver_of(folder).exists():
            pytest.skip(f"round {round_number}'s upstream files are not on this machine ({folder}; see "
                        f"{name}/SOURCE.md)")
        assert planted_bugs(folder) == planted_bugs(ours(round_number) / name), "the folder measured"
        return driver_of(folder)

    return driver


def trace_report(driver: Path, out: Path, status: int) -> dict:
    """Trace ``driver`` as the CLI does, into ``out``, expecting exit ``status``; the written snapshots.json."""
    assert main(["trace", str(driver), "--out", str(out), "--name", "t", "-q"]) == status
    return json.loads((out / "t" / "snapshots.json").read_text(encoding="utf-8"))


def traced(driver: Path, out: Path, status: int = 0) -> list[dict]:
    """The snapshots of ``driver``'s trace (snapshots.json's "snapshots"), its exit ``status`` as expected."""
    return trace_report(driver, out, status)["snapshots"]


def with_bug(tmp_path: Path, folder: Path, bug: dict) -> Path:
    """A copy of ``folder`` with the bug's one text replacement made; the copy's driver."""
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / bug["file"]
    text = target.read_text(encoding="utf-8")
    assert text.count(bug["old"]) == 1, (bug["file"], bug["old"])
    target.write_text(text.replace(bug["old"], bug["new"]), encoding="utf-8")
    return driver_of(copy)


def red_and_passed(snapshots: list[dict]) -> tuple[dict[str, str], int]:
    """The captured steps whose check failed (their details, by label) and how many passed."""
    checks = {s["label"]: s["check"] for s in snapshots if s["captured"]}
    red = {label: check["detail"] for label, check in checks.items() if check["passed"] is False}
    return red, sum(check["passed"] is True for check in checks.values())


def assert_no_red_verdict(driver: Path, out: Path, passed_at_least: int) -> None:
    """Trace the correct ``driver`` into ``out``: no captured step red, and at least ``passed_at_least`` checks passed
    (the checks really ran: a trace that reads nothing has no red verdict either)."""
    red, passed = red_and_passed(traced(driver, out))
    assert not red, red
    assert passed >= passed_at_least, f"the checks really ran: {passed} passed"


# arda92a's pre-norm attention module (round seven), as our own tiny scripts write it: a LayerNorm of its input, then
# nn.MultiheadAttention called with the arguments ``msa_module`` is given, its output marked S15; the scripts put it
# after their imports and sizes (B, N, C)
_MSA = '''\
class MSA(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_norm = nn.LayerNorm(C)
        self.multihead_attn = nn.MultiheadAttention(embed_dim=C, num_heads=4, batch_first=True)

    def forward(self, x):
        layer_norm_x = self.layer_norm(x)
        msa_output, _ = self.multihead_attn(ARGUMENTS)  # BREAKPOINT S15
        return msa_output
'''


def msa_module(arguments: str) -> str:
    """arda92a's MSA module, its attention called with ``arguments`` (continuation lines indented under the call)."""
    return _MSA.replace("ARGUMENTS", arguments)
