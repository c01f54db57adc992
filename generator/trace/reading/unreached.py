"""Why a marker has no hit, as far as the run shows: its line ran and raised, its code ran but not its line, its
function was never called (or runs compiled, by torch.compile or TorchScript, which runs no marker), its module never
ran; and whether the script stopped early."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from transformer_trace.trace.markers import Marker


def unreached(capture: Any, entered: list[tuple[str, int, str]]) -> dict[Marker, str]:
    """Why each marker with no hit was never reached, as far as the run shows: its code ran but not its line, its
    function was never called, its module never ran; and whether the script stopped early."""
    ran = {(file, line) for file, line, _ in entered} | {(file, 0) for file, _, name in entered if name == "<module>"}
    reasons = {}
    for marker in sorted(capture.markers, key=lambda m: (m.file, m.line)):
        if marker in capture.hits:
            continue
        function = _function_around(capture.sources.get(marker.file, ""), marker.first)
        line = _line_as_shown(capture.sources.get(marker.file, ""), marker.first)
        if marker in capture.raised:
            why = f"{line} ran but raised {capture.raised[marker]} before it assigned anything"
        elif (marker.file, function[1] if function else 0) in ran:
            why = f"the code around {line} ran, but not that line (a branch, a loop or a return skipped it)"
        elif function and capture.compiled:
            why = (f"{function[0]}() never ran as written: the script calls torch.compile, and code it compiles runs "
                   f"no marker (trace it with compiling turned off), or it was never called")
        elif function and _run_by_torchscript(capture.sources.get(marker.file, ""), function[0]):
            why = (f"{function[0]}() is compiled by torch.jit, whose compiled code runs no marker (trace it with "
                   f"PYTORCH_JIT=0), or it was never called")
        elif function:
            why = f"{function[0]}() was never called in the traced process (code run in a child process is not traced)"
        elif Path(marker.file) != capture.script:
            why = f"{Path(marker.file).name} was never imported"
        else:
            why = f"the script never got to {line}"
        if not capture.finished:
            why += "; the script stopped early (" + ("--timeout" if capture.timed_out else "an error") + ")"
        reasons[marker] = why
    return reasons


def _run_by_torchscript(source: str, name: str) -> bool:
    """Whether the script hands the function ``name`` to TorchScript (`@torch.jit.script` over it, or
    `torch.jit.script(name)` / `torch.jit.trace(name, ...)`)."""
    name = re.escape(name)
    return re.search(rf"@[\w.]*jit\.script\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*(?:async\s+)?def\s+{name}\b"
                     rf"|jit\.(?:script|trace)\w*\(\s*{name}\b", source) is not None


def _line_as_shown(source: str, line: int) -> str:
    """"line 12" of a script, "cell 3, line 2" of a notebook's (its script's line numbers are no one's)."""
    from transformer_trace.trace.notebook import cell_of

    found = cell_of(source, line)
    return f"cell {found[0]}, line {found[1]}" if found else f"line {line}"


def _function_around(source: str, line: int) -> tuple[str, int] | None:
    """The innermost function holding ``line``: its name and its code's first line (its first decorator's)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    spans = [(n, n.end_lineno) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    functions = [(n, last) for n, last in spans if last is not None and n.lineno <= line <= last]
    if not functions:
        return None
    inner = min(functions, key=lambda found: found[1] - found[0].lineno)[0]
    return inner.name, (inner.decorator_list[0].lineno if inner.decorator_list else inner.lineno)
