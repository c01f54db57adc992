"""Measure a value's walk through the generator: from the tensor read to the pages written, which functions of which
files it passes through, for a traced script's value and for the bundled report's (issue 39, point 6).

    .venv/bin/python scripts/measure_walk.py            # both walks, as counts
    .venv/bin/python scripts/measure_walk.py --stops    # and every stop, in order

Method. The command runs in this process (`trace examples/vit_trace.py`; `build --model toy-vit`) under
``sys.setprofile``. The walked value is snapshot 1's tensor as the generator first holds it: for the trace, the
``Value`` of the first hit of the S01 marker once ``run_script`` returns the capture (its script ran in a child process
and the parent read it); for the bundled report, the ``Recorded`` tensor of snapshot 1's record name once the report's
runner returns the ``ModelRun``. From there until the command's page writing returns (trace/report.py render;
build.py build), every call of a function of generator/ (the child room excluded: it runs in the script's process;
a dataclass's generated ``__init__`` counted in its class's file) is looked at:

- it *touches* the value when an argument is the value or holds it directly (an item of a list, tuple or dict, an
  attribute), or when it returns such an object;
- the value *takes a new form* there when what it makes holds the value and was not the value before: a tensor it
  returns having received the value's (the value in another layout, a slice of it), an object of the generator's built
  from it (a tensor view, a page), a lookup or a collection that hands it on (the pages holding that page). Facts read
  from the value (its bound dimensions, its text) are not the value.

A *stop* is a change of file along those calls (consecutive calls in one file are one stop); a *return* is a stop in a
file the walk had already left. The headline walk is the sequence of new forms (where the value goes: for the bundled
value, record -> tensor view -> section -> page -> render -> templates -> explorer data); every touch is printed too
(it counts each template and page property that reads the page).

Both walks are measured alike, in this one process: calls made in a forked worker would not be seen, so the bundled
build's figure workers are turned off for the measurement (``FigureWorkers`` drawing in this process, as a trace's
figures always are: trace/report.py ``draw_figures``), and each walk counts its figures' drawings reading the value.
Nothing else either command does runs in another process (the trace's script runs in a child process, before the walk
starts; the templates compiled ahead by template_cache.py hold no value).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = str(ROOT / "generator") + "/"
CHILD = GENERATOR + "trace/child/"
PLAIN = (str, bytes, int, float, bool, type(None), type, type(sys))
BIG = 2000  # a container longer than this is not looked into (the pages' own lists are far shorter)


@dataclass
class Walk:
    """The calls that received the value, by file, in order."""

    start: tuple[str, str]  # (file under generator/, function) whose return starts the walk
    end: tuple[str, str]  # ... and whose return ends it
    pick: Any  # the start's return value -> the objects that are the value (none: not started yet)
    carried: dict[int, Any] = field(default_factory=dict)  # id -> object (kept alive: ids never reused meanwhile)
    calls: list[tuple[str, str]] = field(default_factory=list)  # the steps: (file under generator/, function)
    active: bool = False
    done: bool = False
    _seen: list[tuple[str, str]] = field(default_factory=list)  # every generator call while active, in call order
    _kept: set[int] = field(default_factory=set)  # the indexes in _seen of the steps
    _formed: set[int] = field(default_factory=set)  # ... of the steps where the value took a new form
    forms: list[tuple[str, str]] = field(default_factory=list)  # those steps: (file, function)
    _open: list[tuple[int | None, bool]] = field(default_factory=list)  # per open frame: its index, whether it received

    def holds(self, obj: Any, depth: int = 1) -> bool:
        """Whether ``obj`` is the value, or holds it directly (an item, a value, an attribute)."""
        if id(obj) in self.carried:
            return True
        if depth == 0 or isinstance(obj, PLAIN):
            return False
        if isinstance(obj, dict):
            items = list(obj.values()) if len(obj) <= BIG else []
        elif isinstance(obj, (list, tuple, set, frozenset)):
            items = list(obj) if len(obj) <= BIG else []
        else:
            attributes = getattr(obj, "__dict__", None)
            items = list(attributes.values()) if isinstance(attributes, dict) else []
        return any(self.holds(item, depth - 1) for item in items)

    def carry(self, obj: Any) -> None:
        if not isinstance(obj, PLAIN):
            self.carried[id(obj)] = obj

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.done or event not in ("call", "return"):
            return
        where = _generator_function(frame)
        if where is None:
            return
        if event == "call":
            index, received = None, False
            if self.active:
                index = len(self._seen)
                self._seen.append(where)
                code = frame.f_code
                count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
                received = any(self.holds(frame.f_locals.get(param)) for param in code.co_varnames[:count]
                               if param != "self" or code.co_name != "__init__")
                if received:
                    self._kept.add(index)
            self._open.append((index, received))
            return
        index, received = self._open.pop() if self._open else (None, False)
        if not self.active and where == self.start:
            for obj in self.pick(arg):
                self.active = True
                self.carry(obj)
        elif self.active and where == self.end:
            self.done = True
            self.calls = [self._seen[i] for i in sorted(self._kept)]
            self.forms = [self._seen[i] for i in sorted(self._formed)]
        elif index is not None:
            if self.holds(arg):  # it hands the value on (a lookup that returns it, a wrapper of it)
                self._kept.add(index)
            made = frame.f_locals.get("self") if frame.f_code.co_name == "__init__" else arg
            new = id(made) not in self.carried
            if frame.f_code.co_name == "__init__" and received:  # an object of the generator's made of the value
                self.carry(made)
            elif (received and _is_tensor(arg)) or self.holds(arg):  # its tensor re-laid out, or the value handed on
                self.carry(arg)
            if new and id(made) in self.carried:
                self._formed.add(index)


def stops(calls: list[tuple[str, str]]) -> list[str]:
    """The files of ``calls``, one per change of file."""
    files: list[str] = []
    for file, _ in calls:
        if not files or files[-1] != file:
            files.append(file)
    return files


def summary(calls: list[tuple[str, str]]) -> str:
    files = stops(calls)
    returns = sum(1 for i, file in enumerate(files) if file in files[:i])
    return (f"{len(files)} stops in {len(set(files))} files, {returns} of them returns to a file already left "
            f"({len(calls)} calls)")


def _generator_function(frame: FrameType) -> tuple[str, str] | None:
    """(file under generator/, function) of a frame of the generator's code, or of the ``__init__`` a dataclass of the
    generator's was given (its code is made at run time: the class's file is named); None for any other frame."""
    filename = frame.f_code.co_filename
    if filename.startswith(GENERATOR) and not filename.startswith(CHILD):
        return filename[len(GENERATOR):], frame.f_code.co_name
    if frame.f_code.co_name == "__init__" and filename == "<string>" and "self" in frame.f_locals:
        cls = type(frame.f_locals["self"])
        module = sys.modules.get(cls.__module__)
        file = getattr(module, "__file__", None) or ""
        if file.startswith(GENERATOR) and not file.startswith(CHILD):
            return file[len(GENERATOR):], f"{cls.__name__}.__init__"
    return None


def _is_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def _first_traced_value(capture: Any) -> list[Any]:
    marker = min((m for m in capture.hits if capture.hits[m]), key=lambda m: (m.number is None, m.number or 0))
    value = capture.hits[marker][0].values[0]
    return [value, value.tensor]


def _first_recorded_value(run: Any) -> list[Any]:
    name = run.report.snapshots[0].tensors[0].name
    recorded = next((r for key, r in run.recording.items() if key == name), next(iter(run.recording.values())))
    return [recorded, recorded.tensor]


@contextlib.contextmanager
def figures_drawn_here() -> Any:
    """The build's figure workers turned off: every figure drawn in this process, where the walk sees it (a forked
    worker's calls are not seen), as a traced script's figures are drawn."""
    from transformer_trace import build

    forking = build.FigureWorkers.__init__

    def in_this_process(self: Any, jobs: Any, parallel: bool = True) -> None:
        forking(self, jobs, parallel=False)

    build.FigureWorkers.__init__ = in_this_process  # type: ignore[method-assign]
    try:
        yield
    finally:
        build.FigureWorkers.__init__ = forking  # type: ignore[method-assign]


def measure(argv: list[str], walk: Walk) -> Walk:
    from transformer_trace.cli import main

    with figures_drawn_here():
        sys.setprofile(walk.profile)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                code = main(argv)
        finally:
            sys.setprofile(None)
    if code not in (0, 1):  # 1: the trace ran and a check failed
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    if not walk.done:
        raise SystemExit(f"the walk never ended: {walk.end} did not return after {walk.start}")
    return walk


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stops", action="store_true", help="list every stop (file and the functions called there)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        walks = {
            "traced (examples/vit_trace.py)": measure(
                ["trace", str(ROOT / "examples" / "vit_trace.py"), "--out", f"{tmp}/traced", "-q"],
                Walk(("trace/reading/capture.py", "run_script"), ("trace/report.py", "render"), _first_traced_value)),
            "bundled (build --model toy-vit)": measure(
                ["build", "--model", "toy-vit", "--out", f"{tmp}/bundled", "-q"],
                Walk(("reports/toy_vit/runner.py", "run"), ("build.py", "build"), _first_recorded_value)),
        }
    for label, walk in walks.items():
        print(f"{label}:\n  its forms: {summary(walk.forms)}\n  every touch: {summary(walk.calls)}")
    if args.stops:
        for label, walk in walks.items():
            print(f"{label}, its forms:")
            previous = None
            for file, function in walk.forms:
                if file != previous:
                    print(f"  {file}")
                    previous = file
                print(f"      {function}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
