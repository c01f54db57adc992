"""The checkouts a side-by-side run measures (benchmarks/compare.py): this one, and the baseline, given as a folder
with its own ``.venv`` or as a commit, which is checked out here in a scratch worktree with an interpreter of its
own."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Checkout:
    label: str
    root: Path
    python: Path

    @classmethod
    def at(cls, root: Path, python: Path | None = None) -> Checkout:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        return cls(commit or root.name, root.resolve(), python or root / ".venv" / "bin" / "python")


def _git(*args: str) -> str:
    result = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def scratch_interpreter(root: Path) -> Path:
    """A venv in ``root``/.venv that imports ``transformer_trace`` from ``root``'s sources and every other package
    (PyTorch, MkDocs, ...) from the running interpreter's site-packages: the same libraries, the other commit's code."""
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    shutil.copyfile(Path(__file__).with_name("baseline_finder.py"), site / "_tt_baseline_finder.py")
    libraries = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "_tt_baseline.pth").write_text(f"import _tt_baseline_finder; _tt_baseline_finder.install({str(root)!r})\n")
    (site / "zz_libraries.pth").write_text("".join(f"{p}\n" for p in libraries))
    if (Path(sys.prefix) / "share").is_dir():  # data files installed with the libraries: Jupyter's templates
        (venv / "share").symlink_to((Path(sys.prefix) / "share").resolve())
    return venv / "bin" / "python"


class BaselineCheckout:
    """``with BaselineCheckout("c36410f") as baseline:`` a scratch worktree of that commit with its interpreter,
    removed on leaving; a folder is used as it is (its own .venv unless ``python`` is given)."""

    def __init__(self, where: str, python: Path | None = None) -> None:
        self.where, self.python, self.scratch = where, python, None if Path(where).is_dir() else where

    def __enter__(self) -> Checkout:
        if self.scratch is None:
            return Checkout.at(Path(self.where), self.python)
        commit = _git("rev-parse", "--verify", "--quiet", f"{self.scratch}^{{commit}}")
        self.folder = Path(tempfile.mkdtemp(prefix="bench-baseline-")) / commit[:12]
        _git("worktree", "add", "--detach", "--quiet", str(self.folder), commit)
        return Checkout.at(self.folder, self.python or scratch_interpreter(self.folder))

    def __exit__(self, *exc: object) -> None:
        if self.scratch is not None:
            _git("worktree", "remove", "--force", str(self.folder))
            shutil.rmtree(self.folder.parent, ignore_errors=True)
