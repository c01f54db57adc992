"""`make test` (the README's test command, which CI runs) spreads the test files over the machine's cores."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned_pytest(*make_args: str) -> str:
    """The pytest command line `make test` would run (make -n prints it without running anything)."""
    printed = subprocess.run(["make", "-n", "-C", str(ROOT), "test", *make_args], capture_output=True, text=True,
                             check=True).stdout
    return next(line for line in printed.splitlines() if "-m pytest" in line)


def test_make_test_runs_one_worker_per_core_at_most_four():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    assert f"-m pytest -n {min(cores, 4)} --dist loadfile" in planned_pytest()


def test_make_test_takes_the_number_of_workers_from_the_command_line():
    assert "-m pytest -n 0 --dist loadfile" in planned_pytest("TEST_WORKERS=0")


def test_the_test_extras_install_the_worker_plugin():
    import importlib.util
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(requirement.startswith("pytest-xdist") for requirement in extras["test"])
    assert importlib.util.find_spec("xdist") is not None
