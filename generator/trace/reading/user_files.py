"""Which files of the user's a trace reads markers in: the script and the modules of its own folder it imports,
found by reading the code (ast), never by running it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any


def user_files(script: Path) -> list[Path]:
    """The script and the modules of its own folder it imports, directly or through each other (found with ast, not
    by running anything): the files whose markers count and whose frames are traced."""
    root = script.parent
    found: list[Path] = []
    todo = [script]
    while todo and len(found) < 500:
        path = todo.pop()
        if path in found:
            continue
        found.append(path)
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))  # bytes: a PEP 263 coding declaration is honoured
        except (SyntaxError, ValueError, OSError):
            continue  # a module Python may never import (Python 2 code under `if False:`): see markers.scan
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
                base = root
            elif isinstance(node, ast.ImportFrom):
                base = root if not node.level else path.parent.joinpath(*[".."] * (node.level - 1)).resolve()
                prefix = node.module or ""
                modules = [prefix] + [f"{prefix}.{alias.name}".lstrip(".") for alias in node.names]
            elif (named := _imported_by_call(node)) is not None:  # importlib.import_module("marked_module")
                name, package = named
                level = len(name) - len(name.lstrip("."))
                base = root.joinpath(*package.split("."), *[".."] * (level - 1)).resolve() if level else root
                modules = [name.lstrip(".")]
            else:
                continue
            for module in modules:
                if not module:
                    continue
                parts = module.split(".")
                for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
                    if candidate.is_file() and candidate.resolve() not in found:
                        todo.append(candidate.resolve())
    return found


def _imported_by_call(node: Any) -> tuple[str, str] | None:
    """The module a call imports by a name written in it, and the package a relative one is in:
    ``importlib.import_module("a.b")``, ``import_module(".b", "a")``, ``__import__("a.b")``; else None."""
    func = getattr(node, "func", None)
    if getattr(func, "attr", getattr(func, "id", None)) not in ("import_module", "__import__"):
        return None
    written = {k.arg: k.value for k in node.keywords} | dict(zip(("name", "package"), node.args))
    name, package = (getattr(written.get(key), "value", None) for key in ("name", "package"))
    return (name, package if isinstance(package, str) else "") if isinstance(name, str) else None
