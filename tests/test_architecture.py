"""The code's shape: no import circles, and generic code never reaches for a report.

A report is one object (transformer_trace.catalogue.Report); only the entry points read the registry (transformer_trace.reports) and
hand Report objects to the generic code, which gets the rest from the run (``ModelRun.report``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from transformer_trace.reports import REPORTS
from tests.conftest import ROOT

# The only modules that may read the registry: the command line and the MkDocs plugin (they turn what the user asked
# for into Report objects). benchmarks/ and tests/ may too; they are not under generator/.
ENTRY_POINTS = {"transformer_trace.cli", "transformer_trace.arguments", "transformer_trace.__main__",
                "transformer_trace.site.plugin"}
REGISTRY = "transformer_trace.reports"


# The folders and the import names they are installed under (pyproject's package-dir)
IMPORT_NAMES = {"generator": ("transformer_trace",), "models": ("transformer_trace", "models")}


def module_name(path: Path) -> str:
    folder, *parts = path.relative_to(ROOT).with_suffix("").parts
    parts = [*IMPORT_NAMES[folder], *parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for folder in ("generator", "models")
           for path in sorted((ROOT / folder).rglob("*.py"))}
GENERIC = sorted(name for name in MODULES if not name.startswith(REGISTRY) and name not in ENTRY_POINTS)


def _runtime_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node of the module but those under ``if TYPE_CHECKING:`` (imports for annotations only, never run)."""
    typing_only = {id(node) for branch in ast.walk(tree)
                   if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
                   for statement in branch.body for node in ast.walk(statement)}
    return [node for node in ast.walk(tree) if id(node) not in typing_only]


def _known(name: str) -> str | None:
    """The project module ``name`` is, or is inside of (``transformer_trace.render.environment`` -> transformer_trace.render)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str) -> set[str]:
    """The project modules ``name`` imports when it runs, at its top or inside its functions."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {_known(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from its package, one level up per dot after the first
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else _known(base)
                      for alias in node.names}
    return found - {None, name}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: each strongly connected group of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while (top := stack.pop()) != module:
                group.append(top)
            if group:
                cycles.append(sorted([module, *group]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_of_the_generator_or_the_models_imports_in_a_circle():
    graph = {name: imports_of(name) for name in MODULES}
    cycles = import_cycles(graph)
    assert cycles == [], "import circles: " + "; ".join(" <-> ".join(cycle) for cycle in cycles)


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_the_circle_finder_finds_circles_and_only_them(graph, expected):
    assert import_cycles(graph) == expected


def test_the_import_reader_sees_imports_inside_functions_but_not_those_for_annotations_only():
    assert "transformer_trace.render" in imports_of("transformer_trace.landing")  # inside write_landing()
    assert "transformer_trace.catalogue" not in imports_of("transformer_trace.run")  # under TYPE_CHECKING: for annotations only
    assert "transformer_trace.figures" in imports_of("transformer_trace.catalogue")  # at the top


# What names a report in code: its key, its folder under generator/reports/, its model module under models/.
REPORT_FOLDERS = {path.parent.name for path in (ROOT / "generator" / "reports").glob("*/__init__.py")}
REPORT_NAMES = {*REPORTS, *REPORT_FOLDERS}


def report_names_in(name: str) -> list[str]:
    """Where module ``name`` imports the registry or writes a report's key or folder name as a string."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    found = [f"line {node.lineno}: imports {REGISTRY}" for node in ast.walk(tree)
             if isinstance(node, (ast.Import, ast.ImportFrom))
             and any(m == REGISTRY or m.startswith(REGISTRY + ".") for m in
                     ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]))]
    found += [f"line {node.lineno}: {node.value!r}" for node in ast.walk(tree)
              if isinstance(node, ast.Constant) and isinstance(node.value, str)
              and (node.value in REPORT_NAMES
                   or any(f"{REGISTRY}.{folder}" in node.value for folder in REPORT_FOLDERS))]
    return found


@pytest.mark.parametrize("name", GENERIC)
def test_generic_code_neither_imports_the_registry_nor_names_a_report(name):
    """Checks, figures, pages, the build, the trace and the site get Report objects: from the run, or as an argument."""
    assert report_names_in(name) == [], f"{name} reaches for a report instead of being handed one"


def test_the_generic_modules_include_those_the_issue_names():
    named = {"transformer_trace.checks", "transformer_trace.figures", "transformer_trace.render", "transformer_trace.sources", "transformer_trace.tensor_data",
             "transformer_trace.build", "transformer_trace.trace", "transformer_trace.trace.report", "transformer_trace.site.server",
             "transformer_trace.site.forms", "transformer_trace.docs_folder.configured"}
    assert named <= set(GENERIC)


# The faces that call a build for the site: the MkDocs plugin and `serve` (generator/site/), and the command line that
# starts `serve`. What they build on, the docs folder's machinery (generator/docs_folder/) and the core (the build,
# the trace, the class page, the PDF export ...), lies below them and never imports them.
SITE = "transformer_trace.site"
FACES = (SITE, "transformer_trace.cli", "transformer_trace.__main__")


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


BELOW_THE_FACES = sorted(name for name in MODULES if not any(_inside(name, face) for face in FACES))


@pytest.mark.parametrize("name", BELOW_THE_FACES)
def test_the_docs_folder_machinery_and_the_core_never_import_the_site_package(name):
    assert sorted(i for i in imports_of(name) if _inside(i, SITE)) == [], \
        f"{name} reaches up into {SITE}, which calls it"


def test_the_docs_folder_machinery_is_below_the_faces():
    assert {"transformer_trace.docs_folder.staging", "transformer_trace.docs_folder.configured",
            "transformer_trace.build", "transformer_trace.trace", "transformer_trace.classroom",
            "transformer_trace.pdf", "transformer_trace.arguments"} <= set(BELOW_THE_FACES)
    assert not any(_inside(name, SITE) for name in BELOW_THE_FACES)


def test_the_guard_catches_an_import_of_the_registry_and_a_key(tmp_path, monkeypatch):
    key = next(iter(REPORTS))
    path = tmp_path / "generic.py"
    path.write_text(f"def f():\n    from transformer_trace.reports import REPORTS\n    return REPORTS[{key!r}]\n",
                    encoding="utf-8")
    monkeypatch.setitem(MODULES, "generator.generic", path)
    assert report_names_in("generator.generic") == ["line 2: imports transformer_trace.reports", f"line 3: {key!r}"]


# The child room (generator/trace/child/) runs inside the traced script's interpreter, loaded by path: nothing of
# transformer_trace is importable there, and torch or NumPy only once the script has imported them (sys.modules).
CHILD_ROOM = ROOT / "generator" / "trace" / "child"
PROTOCOL = "protocol"


def child_room_violations(source: str) -> list[str]:
    """The imports of a child-room module that are neither the standard library nor the room's protocol (``from .
    import protocol``, ``from .protocol import X``), wherever they sit: at the top or inside a function."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {alias.name}" for alias in node.names
                      if alias.name.split(".")[0] not in sys.stdlib_module_names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            if (node.module or "").split(".")[0] not in sys.stdlib_module_names:
                found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.ImportFrom):
            named = [node.module] if node.module else [alias.name for alias in node.names]
            if node.level != 1 or named != [PROTOCOL]:
                found.append(f"line {node.lineno}: from {'.' * node.level}{node.module or ''} import "
                             f"{', '.join(alias.name for alias in node.names)}")
    return found


@pytest.mark.parametrize("path", sorted(CHILD_ROOM.glob("*.py")), ids=lambda path: path.name)
def test_the_child_room_imports_only_the_standard_library_and_its_protocol(path):
    assert child_room_violations(path.read_text(encoding="utf-8")) == [], f"{path.name} imports outside its room"


def test_the_child_room_holds_the_modules_the_traced_interpreter_loads():
    assert {"bootstrap.py", "protocol.py", "copies.py", "results.py", "module_calls.py"} <= {
        path.name for path in CHILD_ROOM.glob("*.py")}


@pytest.mark.parametrize("source, allowed", [
    ("import json, os\nfrom importlib.util import spec_from_file_location\n", True),
    ("from . import protocol\nfrom .protocol import ModuleKind\n", True),
    ("def f():\n    import torch\n", False),  # inside a function too: torch comes from sys.modules
    ("import numpy as np\n", False),
    ("from transformer_trace.trace.child import protocol\n", False),  # the package is not importable there
    ("from . import copies\n", False),  # a sibling is handed over by bootstrap.py, loaded by path
    ("from ..reading import capture\n", False),
])
def test_the_child_room_rule_tells_allowed_imports_from_the_others(source, allowed):
    assert (child_room_violations(source) == []) is allowed


def test_the_generator_imports_of_the_child_room_only_its_protocol():
    """The child's other modules run in the script's interpreter; the generator starts bootstrap.py by its path."""
    child = "transformer_trace.trace.child"
    reaching = {name: sorted(m for m in imports_of(name) if m.startswith(child + ".") and m != f"{child}.{PROTOCOL}")
                for name in MODULES if not name.startswith(child)}
    assert {name: found for name, found in reaching.items() if found} == {}
