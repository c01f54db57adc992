"""Measure a value's walk through the generator: from the tensor read to the pages written, which functions of which
files it passes through, for a traced script's value and for the bundled report's (issue 39, point 6).

    .venv/bin/python scripts/measure_walk.py            # both walks, as counts
    .venv/bin/python scripts/measure_walk.py --stops    # and every stop, in order

Method. The command runs in this process (`trace examples/vit_trace.py`; `build --model toy-vit`) under
``sys.setprofile``. The walked value is snapshot 1's tensor as the generator first holds it: for the trace, the
``Value`` of the first hit of the S01 marker once ``run_script`` returns the capture (its script ran in a child process
and the parent read it); for the bundled report, the ``Recorded`` tensor of snapshot 1's record name once the report's
runner returns the ``ModelRun``. From there until the command's page writing returns (trace.report.render; build.build),
every call into a function of generator/ (the child room excluded: it runs in the script's process) that receives the
value is a step of the walk: an argument that is the value, or holds it one or two levels down (a list, tuple, dict or
an object's attributes, as a list of hits holds a hit that holds the value). What such a call returns (an object, not
text or a number) is the value too from then on: the laid-out tensor, the page made of it, the pages holding that page.
A *stop* is a change of file along those calls (consecutive calls in one file are one stop); a *return* is a stop in a
file the walk had already left. Work in forked worker processes (figures) is not seen.
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
    calls: list[tuple[str, str]] = field(default_factory=list)  # (file relative to generator/, function)
    active: bool = False
    done: bool = False
    _pending: list[bool] = field(default_factory=list)  # per open generator frame: whether it received the value

    def holds(self, obj: Any, depth: int = 2) -> bool:
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
        filename = frame.f_code.co_filename
        if not filename.startswith(GENERATOR) or filename.startswith(CHILD):
            return
        name = frame.f_code.co_name
        if event == "call":
            received = False
            if self.active:
                code = frame.f_code
                count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
                received = any(self.holds(frame.f_locals.get(param)) for param in code.co_varnames[:count])
                if received:
                    self.calls.append((filename[len(GENERATOR):], name))
            self._pending.append(received)
            return
        received = self._pending.pop() if self._pending else False
        where = (filename[len(GENERATOR):], name)
        if not self.active and where == self.start:
            for obj in self.pick(arg):
                self.active = True
                self.carry(obj)
        elif self.active and where == self.end:
            self.done = True
        elif received:
            self.carry(arg)

    def stops(self) -> list[str]:
        files: list[str] = []
        for file, _ in self.calls:
            if not files or files[-1] != file:
                files.append(file)
        return files

    def summary(self) -> dict[str, int]:
        stops = self.stops()
        returns = sum(1 for i, file in enumerate(stops) if file in stops[:i])
        return {"calls": len(self.calls), "stops": len(stops), "files": len(set(stops)), "returns": returns}


def _first_traced_value(capture: Any) -> list[Any]:
    marker = min((m for m in capture.hits if capture.hits[m]), key=lambda m: (m.number is None, m.number or 0))
    value = capture.hits[marker][0].values[0]
    return [value, value.tensor]


def _first_recorded_value(run: Any) -> list[Any]:
    name = run.report.snapshots[0].tensors[0].name
    recorded = next((r for key, r in run.recording.items() if key == name), next(iter(run.recording.values())))
    return [recorded, recorded.tensor]


def measure(argv: list[str], walk: Walk) -> Walk:
    from transformer_trace.cli import main

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
        counts = walk.summary()
        print(f"{label}: {counts['stops']} stops in {counts['files']} files, {counts['returns']} of them returns to a "
              f"file already left ({counts['calls']} calls receive the value)")
        if args.stops:
            previous = None
            for file, function in walk.calls:
                if file != previous:
                    print(f"  {file}")
                    previous = file
                print(f"      {function}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
