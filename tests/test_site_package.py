"""generator/site/ (the MkDocs site and its faces) and generator/docs_folder/ (the docs folder's machinery below them),
as packages: no import circle with the command line or within, nothing computed when they are imported, and every
function and class short enough to read (issue 19)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

GENERATOR = ROOT / "generator"
SITE = GENERATOR / "site"
DOCS_FOLDER = GENERATOR / "docs_folder"
PACKAGES = (SITE, DOCS_FOLDER)
MAX_LINES = 150  # of one function or class


def _module(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The generator modules ``path`` imports, at its top or inside functions; imports only for type checkers
    (``if TYPE_CHECKING:``) are not imports at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
                   for node in ast.walk(block)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found & modules - {_module(path)}


def _import_circles() -> list[list[str]]:
    """Every group of generator modules that import one another round a circle (Tarjan's strongly connected components)."""
    paths = {_module(p): p for p in GENERATOR.rglob("*.py")}
    graph = {name: _imports(path, set(paths)) for name, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for other in graph[name]:
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            group = []
            while not group or group[-1] != name:
                group.append(stack.pop())
            if len(group) > 1:
                circles.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return circles


def test_the_site_package_and_the_command_line_import_no_circle():
    mine = [group for group in _import_circles()
            if any(name.startswith(("transformer_trace.site", "transformer_trace.docs_folder")) or name in ("transformer_trace.cli", "transformer_trace.arguments") for name in group)]
    assert mine == []
    importers_of_cli = [_module(path) for package in PACKAGES for path in sorted(package.glob("*.py"))
                        if _imports(path, {"transformer_trace.cli"})]
    assert importers_of_cli == []  # not even inside a function


def test_importing_the_site_machinery_imports_no_cli_no_report_and_no_pytorch():
    modules = sorted(_module(p) for package in PACKAGES for p in package.glob("*.py"))
    code = f"import sys\nfor m in {modules!r}: __import__(m)\nprint(sorted(m for m in ('transformer_trace.cli', 'transformer_trace.reports', 'torch') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_no_function_or_class_of_the_site_package_is_longer_than_the_limit():
    long = []
    for path in sorted(p for package in PACKAGES for p in package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.end_lineno - node.lineno + 1 > MAX_LINES:
                long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert long == []
