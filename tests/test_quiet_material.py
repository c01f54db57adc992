"""The README's plain `mkdocs` commands (`.venv/bin/mkdocs serve`, `mkdocs build`) print no Material end-of-life
banner: `make`'s install step sets Material's own switch, NO_MKDOCS_2_WARNING, for the environment's programs
(scripts/quiet_material.py writes a .pth file that sets it at start-up)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

BANNER = "Material for MkDocs reaches end of life"


@pytest.fixture
def bare_environment(tmp_path) -> Path:
    """A new environment (no pip: nothing is installed) that sees this one's packages, as a plain path .pth file."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    ours = [p for p in sys.path if p.endswith("site-packages")] + [sysconfig.get_paths()["purelib"]]
    (purelib / "this-environment.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n", encoding="utf-8")
    return python


def _plain_mkdocs_build(python: Path, site: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_MKDOCS_2_WARNING", "DISABLE_MKDOCS_2_WARNING")}
    return subprocess.run([str(python), "-m", "mkdocs", "build", "-q"], cwd=site, capture_output=True, text=True,
                          env=env)


def test_a_plain_mkdocs_build_prints_no_banner_once_the_environment_is_set_up(bare_environment, tmp_path):
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    (site / "mkdocs.yml").write_text("site_name: banner\ntheme:\n  name: material\n  font: false\n", encoding="utf-8")
    before = _plain_mkdocs_build(bare_environment, site)
    assert before.returncode == 0 and BANNER in before.stderr  # what a user saw: Material prints it
    subprocess.run([str(bare_environment), str(ROOT / "scripts" / "quiet_material.py")], check=True,
                   capture_output=True)
    after = _plain_mkdocs_build(bare_environment, site)
    assert after.returncode == 0, after.stderr
    assert BANNER not in after.stderr and "NO_MKDOCS_2_WARNING" not in after.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_makes_install_step_sets_the_switch_up():
    steps = subprocess.run(["make", "-n", "-B", ".venv/.installed-stamp"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout
    assert ".venv/bin/python scripts/quiet_material.py" in steps.splitlines()
