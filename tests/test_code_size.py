"""The project's code-size rules, measured on every module of the code (tests aside).

No module over 500 lines, no function over 80 lines, no class over 150 lines, no line over 120 characters:
past these a reader can no longer hold a unit in view. Each test names every offender, so one run lists them all.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MEASURED = ("generator", "models", "benchmarks", "scripts")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 150
MAX_LINE_CHARS = 120


def modules() -> list[Path]:
    return sorted(path for folder in MEASURED for path in (ROOT / folder).rglob("*.py"))


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def definitions(path: Path) -> list[tuple[str, ast.AST]]:
    """Every function and class of a module, nested ones too, as (qualified name, node)."""
    found: list[tuple[str, ast.AST]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                found.append((name, child))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), "")
    return found


def span(node: ast.AST) -> int:
    """Lines from the first decorator to the last line of the body."""
    first = min([node.lineno, *(decorator.lineno for decorator in getattr(node, "decorator_list", ()))])
    return node.end_lineno - first + 1


def test_the_measured_folders_hold_modules():
    assert len(modules()) > 50, [relative(path) for path in modules()]


def test_no_module_is_over_500_lines():
    sizes = {relative(path): len(path.read_text(encoding="utf-8").splitlines()) for path in modules()}
    long = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


@pytest.mark.parametrize(("kind", "limit"), [(ast.FunctionDef, MAX_FUNCTION_LINES), (ast.ClassDef, MAX_CLASS_LINES)],
                         ids=["functions", "classes"])
def test_no_function_or_class_is_over_its_limit(kind, limit):
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if kind is ast.FunctionDef else (ast.ClassDef,)
    long = {f"{relative(path)}:{name}": n for path in modules() for name, node in definitions(path)
            if isinstance(node, kinds) and (n := span(node)) > limit}
    assert not long, f"over {limit} lines: {long}"


def test_no_line_is_over_120_characters():
    long: dict[str, list[int]] = {}
    for path in modules():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if len(line) > MAX_LINE_CHARS:
                long.setdefault(relative(path), []).append(number)
    counts = {name: len(lines) for name, lines in long.items()}
    assert not long, f"lines over {MAX_LINE_CHARS} characters, per module: {counts}; first lines: {long}"
