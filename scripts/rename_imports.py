#!/usr/bin/env python3
"""Give the installed package an import name of its own: `generator` -> `transformer_trace`, `models` ->
`transformer_trace.models`, over a working tree (default: this clone). The folders stay where the design card puts
them (generator/, models/ at the top): pyproject.toml maps the names onto them (setuptools' package-dir).

    python3 scripts/rename_imports.py [ROOT] [--check]

Idempotent: a second run changes nothing. Prints every file it changed with what it renamed, then the occurrences it
left for a person to judge (a bare "generator"/"models" string it cannot place). --check changes nothing and exits 1
when something would change.

What is renamed, in code (*.py, *.ipynb, *.j2, *.js) and in text (*.md, *.yml, *.toml, Makefile, shell):
- `from generator[.X] import ...`, `import generator[.X]`, and the same for `models` (only its own submodules);
- dotted module paths naming one of the package's own modules: "generator.reports.gpt", generator.cli:main,
  monkeypatch strings, sys.modules keys, `generator.pdf.export(...)` after `import generator.pdf`;
- `python -m generator` (and ["-m", "generator"] in argument lists), logger names ("generator"),
  __import__/import_module/find_spec("generator" | "models");
- pyproject.toml: packages.find -> explicit packages with package-dir (transformer_trace = generator/,
  transformer_trace.models = models/).
Never renamed: folder paths (generator/reports/..., ROOT / "generator"), prose ("the generator", "models"), a
`models.X` whose X is not one of the project's models, files under a folder with its own models/ or generator/
(a traced project's own package, e.g. tests/trace_corpus/<repo>/models/), a line holding "rename_imports: keep",
a file holding "rename_imports: skip-file".
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

NEW = "transformer_trace"
OLD = {"generator": NEW, "models": f"{NEW}.models"}
SUFFIXES = {".py", ".ipynb", ".j2", ".js", ".css", ".md", ".yml", ".yaml", ".toml", ".sh", ".cfg", ".ini", ".txt"}
NAMES = {"Makefile", "run", ".gitignore"}  # .ci/run
DUNDERS = {"__file__", "__path__", "__name__", "__version__", "__main__", "__init__", "__spec__"}
KEEP_LINE = "rename_imports: keep"
SKIP_FILE = "rename_imports: skip-file"


def own_modules(root: Path, folder: str) -> set[str]:
    """The modules and subpackages directly inside the package folder (``generator`` or ``models``), and the names its
    __init__ defines: what `folder.X` / `from folder import X` may name."""
    base = root / folder
    names = set(DUNDERS)
    if not base.is_dir():
        return names
    for entry in base.iterdir():
        if entry.suffix == ".py":
            names.add(entry.stem)
        elif entry.is_dir() and (entry / "__init__.py").is_file():
            names.add(entry.name)
    init = base / "__init__.py"
    if init.is_file():
        defined = re.findall(r"^(?:def|class)\s+(\w+)|^(\w+)\s*[:=]", init.read_text(encoding="utf-8"), re.M)
        names |= {a or b for a, b in defined}
    return names


def rules(root: Path) -> list[tuple[str, re.Pattern, str]]:
    """(description, pattern, replacement) in the order applied."""
    out = []
    for old, new in OLD.items():
        subs = "|".join(sorted(map(re.escape, own_modules(root, old)), key=len, reverse=True))
        q = r"""(?P<q>["'])"""
        out += [
            (f"from {old}.X import", re.compile(rf"(?<![\w.])from(\s+){old}\.(?=(?:{subs})\b)"), rf"from\1{new}."),
            (f"from {old} import", re.compile(rf"(?<![\w.])from(\s+){old}(\s+)import(?=\s+\(?\s*(?:{subs})\b)"),
             rf"from\1{new}\2import"),
            (f"import {old}.X", re.compile(rf"(?<![\w.])import(\s+){old}\.(?=(?:{subs})\b)"), rf"import\1{new}."),
            (f"import {old}", re.compile(rf"(?<![\w.])import(\s+){old}(?=[ \t]*(?:$|\n|\\n|;|,|\"|\bas\b))", re.M),
             rf"import\1{new}"),
            (f"{old}.X module path", re.compile(rf"(?<![\w./\\-]){old}\.(?=(?:{subs})\b)"), f"{new}."),
            (f"{old}\\.X in a regular expression", re.compile(rf"(?<![\w./\\-]){old}\\\.(?=(?:{subs})\b)"),
             new.replace(".", "\\\\.") + "\\\\."),
            (f'import_module("{old}")', re.compile(rf"""((?:__import__|import_module|find_spec)\(\s*){q}{old}(?P=q)"""),
             rf"\1\g<q>{new}\g<q>"),
        ]
    out += [
        ("python -m generator", re.compile(r"(?<![\w-])-m(\s+)generator\b(?![\w./-])"), rf"-m\1{NEW}"),
        ('"-m", "generator"', re.compile(r"""(b?(?P<q>["'])-m(?P=q)\s*,\s*b?)(?P<r>["'])generator(?P=r)"""),
         rf"\1\g<r>{NEW}\g<r>"),
        ('logger "generator"', re.compile(r"""((?:getLogger\(|logger=)\s*)(?P<q>["'])generator(?P=q)"""),
         rf"\1\g<q>{NEW}\g<q>"),
    ]
    return out


def tracked_files(root: Path) -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root, capture_output=True,
                                check=True).stdout.decode().split("\0")
        return [root / name for name in listed if name]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "__pycache__", "site", "build", "node_modules", ".cache"}
        found = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d not in skip and not d.startswith(".") or d in (".github", ".ci")]
            found += [Path(folder) / n for n in names]
        return found


def has_own_package(path: Path, root: Path) -> bool:
    """Whether a folder between ``path`` and ``root`` (root excluded) has its own models or generator package: then
    `models`/`generator` in ``path`` is that project's, not ours."""
    folder = path.parent
    while folder != root and root in folder.parents:
        if any((folder / n).exists() for n in ("models", "models.py", "generator", "generator.py")):
            return True
        folder = folder.parent
    return False


def rename_text(text: str, compiled: list[tuple[str, re.Pattern, str]]) -> tuple[str, dict[str, int]]:
    counts: dict[str, int] = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if KEEP_LINE in line:
            continue
        for what, pattern, replacement in compiled:
            line, n = pattern.subn(replacement, line)
            if n:
                counts[what] = counts.get(what, 0) + n
        lines[i] = line
    return "\n".join(lines), counts


PYPROJECT_FIND = re.compile(r"\[tool\.setuptools\.packages\.find\]\ninclude = \[[^\]]*\]\n")


def rename_pyproject(text: str, root: Path) -> tuple[str, dict[str, int]]:
    """packages.find (which would install top-level `generator` and `models`) -> the packages under their own name."""
    if not PYPROJECT_FIND.search(text):
        return text, {}
    packages = []
    for old, new in OLD.items():
        for init in sorted((root / old).rglob("__init__.py")):
            parts = init.parent.relative_to(root / old).parts
            if "__pycache__" not in parts:
                packages.append(".".join((new, *parts)))
    listed = ",\n".join(f'    "{p}"' for p in packages)
    block = ("# The import name is the distribution's own (transformer_trace); the folders stay where the design card\n"
             "# puts them. A subpackage missing here still ships (package-data takes every file under the folders).\n"
             "[tool.setuptools]\n"
             f'package-dir = {{"{NEW}" = "generator", "{NEW}.models" = "models"}}\n'
             f"packages = [\n{listed},\n]\n")
    return PYPROJECT_FIND.sub(lambda _m: block, text), {"pyproject packages -> package-dir": 1}


LEFT = re.compile(r"""(?<![\w./-])(["'])(generator|models)\1""")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent)
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 when something would change")
    args = p.parse_args(argv)
    root = args.root.resolve()
    if not (root / "generator").is_dir():
        print(f"error: {root} has no generator/ folder: not a transformer-trace working tree", file=sys.stderr)
        return 2
    compiled = rules(root)
    me = Path(__file__).resolve()
    changed, left = 0, []
    for path in sorted(tracked_files(root)):
        if not path.is_file() or path.resolve() == me or not (path.suffix in SUFFIXES or path.name in NAMES):
            continue
        if has_own_package(path, root):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if SKIP_FILE in text:
            continue
        new, counts = rename_text(text, compiled)
        if path.name == "pyproject.toml" and path.parent == root:
            new, extra = rename_pyproject(new, root)
            counts.update(extra)
        if path.suffix in (".py", ".ipynb"):
            left += [f"{path.relative_to(root)}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0)}"
                     for m in LEFT.finditer(new) if KEEP_LINE not in new.split("\n")[new[:m.start()].count("\n")]]
        if new != text:
            changed += 1
            print(f"{path.relative_to(root)}: " + ", ".join(f"{what} ×{n}" for what, n in counts.items()))
            if not args.check:
                path.write_text(new, encoding="utf-8")
    print(f"{'would change' if args.check else 'changed'} {changed} file(s)")
    if left:
        print("left as they are (a bare name that may not be a module; judge each):")
        print("\n".join(f"  {line}" for line in left))
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
