"""The code type-checks: mypy finds nothing in generator/ and models/, their imports resolved (scripts/typecheck.py
says how, and why a plain `mypy generator models` would not resolve them)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_generator_and_models_type_check_clean() -> None:
    checked = subprocess.run([sys.executable, str(ROOT / "scripts" / "typecheck.py")], capture_output=True, text=True,
                             timeout=900)
    assert checked.returncode == 0, f"mypy found type errors in generator/ or models/:\n{checked.stdout}{checked.stderr}"


def test_the_check_reads_the_folders_under_their_import_names(tmp_path) -> None:
    """Across modules, a wrong type is an error (it would read as Any were transformer_trace unresolved), and the
    report names the repository's own files."""
    typecheck = _script()
    typecheck.link_tree(tmp_path)
    (tmp_path / "probe.py").write_text("from transformer_trace.errors import UserError\n"
                                        "from transformer_trace.models.recording import Point\n"
                                        "wrong: int = UserError('a refusal')\n"
                                        "also_wrong: str = Point\n", encoding="utf-8")
    checked = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                              "--cache-dir", str(typecheck.WORK / "cache"), "probe.py"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert "probe.py:3: error: Incompatible types in assignment" in checked.stdout, checked.stdout
    assert "probe.py:4: error: Incompatible types in assignment" in checked.stdout, checked.stdout
    assert typecheck.repository_paths("transformer_trace/models/gpt.py:3: error\ntransformer_trace/cli.py:1: note") \
        == "models/gpt.py:3: error\ngenerator/cli.py:1: note"


def _script():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import typecheck
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return typecheck
