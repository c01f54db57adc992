"""Type-check generator/ and models/ with mypy (pinned in pyproject's `test` extra, configured in its [tool.mypy]).

Run: .venv/bin/python scripts/typecheck.py   (tests/test_types.py runs it in `make test`; exit status is mypy's)

The folders are installed under another name (pyproject's package-dir: generator/ is ``transformer_trace``, models/
is ``transformer_trace.models``), and the editable install maps them with an import hook mypy cannot follow: checked
as ``generator.cli``, every ``from transformer_trace... import`` would be unresolved and read as ``Any`` (a plain
`mypy generator models` checks each module alone). So mypy checks a tree of links that lays the folders out under
their import names, in the gitignored build/ folder, and the paths in its report are written back as the repository's.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "mypy"  # at a fixed place: mypy's cache (beside the tree) keys a module by its path
# Where each folder sits in the installed package (pyproject's package-dir), the one inside the other first
PACKAGE_FOLDERS = {"models": "transformer_trace/models", "generator": "transformer_trace"}


def link_tree(into: Path) -> None:
    """``into``/transformer_trace: each entry of generator/ linked under its own name, models/ as its ``models``."""
    shutil.rmtree(into, ignore_errors=True)
    package = into / "transformer_trace"
    package.mkdir(parents=True)
    for entry in (ROOT / "generator").iterdir():
        (package / entry.name).symlink_to(entry)
    (package / "models").symlink_to(ROOT / "models")


def repository_paths(report: str) -> str:
    """mypy's report with the tree's paths written as the repository's."""
    lines = []
    for line in report.splitlines():
        for folder, name in PACKAGE_FOLDERS.items():
            if line.startswith(f"{name}/"):
                line = f"{folder}/{line.removeprefix(name + '/')}"
                break
        lines.append(line)
    return "\n".join(lines)


def main() -> int:
    link_tree(WORK / "tree")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
         str(WORK / "cache"), "-p", "transformer_trace"],
        cwd=WORK / "tree", capture_output=True, text=True)
    print(repository_paths(checked.stdout + checked.stderr))
    return checked.returncode


if __name__ == "__main__":
    sys.exit(main())
