"""Run a user's script as ``python SCRIPT.py`` would, and capture the marked values like a debugger stepping over them.

Only frames of the files that hold markers are traced line by line (the global trace function returns None for
every other frame, so library code runs untraced); a marked statement's value is read from the frame's locals at
the frame's next line or return event, i.e. once the statement has executed. Every hit is kept.
"""

from __future__ import annotations

import hashlib
import os
import threading
import runpy
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.errors import UserError
from generator.trace.markers import RETURN_VALUE, Marker

# Past this many bytes of captured copies, later hits keep their shape and statistics only (the pages stay bounded).
CAPTURE_BUDGET_BYTES = 512 * 2**20


class TraceTimeout(BaseException):
    """Raised inside the user's script when --timeout runs out (a BaseException: `except Exception` does not stop it)."""


class ScriptExit(SystemExit):
    """What ``os._exit`` raises while a script is traced: ending the process there would skip the report (and leave
    the output half-written), so it ends the script like ``sys.exit`` instead."""


def _script_exit(status: int) -> None:
    raise ScriptExit(status)


class MissingVariable(BaseException):
    """Raised inside the user's script when a marked variable does not exist (bad input, reported in one line)."""


@dataclass
class Value:
    """One variable at one hit: a CPU copy (tensor or dict of tensors) or why there is none."""

    name: str
    kind: str  # "tensor", "ints", "scalar", "dict", "other"
    tensor: Any = None  # torch.Tensor (CPU copy) or dict[str, torch.Tensor]
    device: str = "cpu"
    note: str = ""  # why no copy was kept, or what it was converted from


@dataclass
class Hit:
    order: int  # global capture order: the pipeline order of the run
    values: list[Value]
    site: tuple[str, int] | None = None  # for a line shared by several snapshots: the user's line that called it


@dataclass
class Capture:
    script: Path
    markers: list[Marker]
    hits: dict[Marker, list[Hit]] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None  # the exception that ended the script, with its line
    error_at: tuple[str, int] | None = None
    timed_out: bool = False
    seeds: list[int] = field(default_factory=list)
    sha256: str = ""
    kept_bytes: int = 0
    warnings: list[str] = field(default_factory=list)  # what the report could not use, said on the overview
    sources: dict[str, str] = field(default_factory=dict)  # each marked file as it was when the run began

    @property
    def finished(self) -> bool:
        return self.error is None and not self.timed_out


def user_files(script: Path) -> list[Path]:
    """The script and the modules of its own folder it imports, directly or through each other (found with ast, not
    by running anything): the files whose markers count and whose frames are traced."""
    import ast

    root = script.parent
    found: list[Path] = []
    todo = [script]
    while todo and len(found) < 500:
        path = todo.pop()
        if path in found:
            continue
        found.append(path)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue  # reported when its markers are read (the script) or when Python imports it
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
                base = root
            elif isinstance(node, ast.ImportFrom):
                base = root if not node.level else path.parent.joinpath(*[".."] * (node.level - 1)).resolve()
                prefix = node.module or ""
                modules = [prefix] + [f"{prefix}.{alias.name}".lstrip(".") for alias in node.names]
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


def to_value(name: str, value: Any, budget_left: int) -> Value:
    import torch

    if isinstance(value, torch.Tensor):
        size = value.numel() * value.element_size()
        if value.layout == torch.strided and 0 < size <= budget_left and not (value.is_complex() or value.is_quantized):
            # the usual case first, and cheaply: a marked line may run thousands of times
            device = value.device.type
            return Value(name, "tensor", value.detach().clone() if device == "cpu" else value.detach().to("cpu", copy=True), device)
        described = f"{tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}"
        if value.is_complex() or value.is_quantized or value.numel() == 0:
            kind = "complex" if value.is_complex() else "quantized" if value.is_quantized else "empty"
            return Value(name, "other", None, value.device.type, f"a {kind} tensor {described}, which a page cannot show")
        if value.layout != torch.strided:  # sparse: its values, as the dense tensor they stand for
            if value.numel() * value.element_size() > budget_left:
                return Value(name, "other", None, value.device.type, f"a sparse tensor {described}, not copied: too big to make dense")
            dense = to_value(name, value.detach().to_dense(), budget_left)
            dense.note = "a sparse tensor, shown dense"
            return dense
        return Value(name, "tensor", None, value.device.type, f"{described}, "  # the only case left: over the budget
                     f"not copied: the captures already hold {CAPTURE_BUDGET_BYTES // 2**20} MiB")
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return Value(name, "scalar", torch.tensor(value), "cpu", type(value).__name__)
    if isinstance(value, (list, tuple)) and value and _all_ints(value):
        try:
            return Value(name, "ints", torch.tensor(value, dtype=torch.long), "cpu", f"a {type(value).__name__} of ints")
        except (ValueError, TypeError):
            pass
    if isinstance(value, dict) and value and all(isinstance(v, torch.Tensor) for v in value.values()):
        if sum(v.numel() * v.element_size() for v in value.values()) > budget_left:
            return Value(name, "dict", None, "cpu", f"a dict of {len(value)} tensors, not copied: the captures already hold "
                         f"{CAPTURE_BUDGET_BYTES // 2**20} MiB")
        return Value(name, "dict", {str(k): v.detach().to("cpu", copy=True) for k, v in value.items()},
                     next(iter(value.values())).device.type, "a dict of tensors")
    try:
        import numpy as np

        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            return Value(name, "tensor", torch.from_numpy(value.copy()), "cpu", "a NumPy array")
    except ImportError:  # pragma: no cover
        pass
    return Value(name, "other", None, "cpu", f"a {type(value).__name__}, which a page cannot show")


def _all_ints(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_all_ints(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)


def _read(frame: Any, name: str) -> Any:
    head, *attributes = name.split(".")
    scope = frame.f_locals
    if head not in scope:
        scope = frame.f_globals
    if head not in scope:
        raise KeyError(head)
    value = scope[head]
    for attribute in attributes:
        value = getattr(value, attribute)
    return value


_UNSEEN = object()


def _exists(frame: Any, name: str) -> bool:
    try:
        _read(frame, name)
    except (KeyError, AttributeError):
        return False
    return True


class _Tracer:
    """sys.settrace's global function (``global_trace``) and, for frames whose code holds a marked line, one small local
    function per frame: a marked statement becomes pending on its line event and is read at the frame's next line
    outside it or at its return. Everything else returns None at once, so other code runs untraced."""

    def __init__(self, capture: Capture) -> None:
        self.capture = capture
        self.by_file: dict[str, dict[int, list[Marker]]] = {}  # file -> statement line -> markers
        for marker in capture.markers:
            for line in range(marker.first, marker.last + 1):
                self.by_file.setdefault(marker.file, {}).setdefault(line, []).append(marker)
        self.codes: dict[Any, dict[int, list[Marker]] | None] = {}  # code object -> its marked lines, or None
        self.user_files = {str(capture.script), *self.by_file}
        self.order = 0
        self.hit_lists: dict[int, list[Hit]] = {}  # id(marker) -> capture.hits[marker] (the markers live as long as the capture)

    def _marked_lines(self, code: Any) -> dict[int, list[Marker]] | None:
        lines = self.by_file.get(code.co_filename)
        if not lines or (code.co_name.startswith("<") and code.co_name != "<module>"):
            return None  # a comprehension or lambda inside a marked line is part of the statement, not where it assigns
        spans = [line for _, _, line in code.co_lines() if line is not None]
        if not spans:
            return None
        low, high = min(spans), max(spans)
        own = {line: markers for line, markers in lines.items() if low <= line <= high}
        return own or None

    def global_trace(self, frame, event, arg):
        code = frame.f_code
        lines = self.codes.get(code, _UNSEEN)
        if lines is _UNSEEN:
            lines = self.codes[code] = self._marked_lines(code)
        if lines is None:
            return None
        take = self._take
        pending = None  # (first line, last line, markers) of the statement that is running

        def local_trace(frame, event, arg):
            nonlocal pending
            if event == "line":
                line = frame.f_lineno
                if pending is not None:
                    if pending[0] <= line <= pending[1]:
                        return local_trace
                    markers, pending = pending[2], None
                    take(frame, markers)
                markers = lines.get(line)
                if markers is not None:
                    pending = (markers[0].first, markers[0].last, markers)
            elif event == "return":
                if pending is not None:
                    markers, pending = pending[2], None
                    take(frame, markers, arg)
            elif event == "exception":
                pending = None  # the statement did not complete: nothing was assigned
            return local_trace

        return local_trace

    def _take(self, frame, markers: list[Marker], returned: Any = None) -> None:
        for marker in markers:
            values = []
            names = marker.names
            if marker.fallback and not all(_exists(frame, name) for name in names):
                names = marker.fallback
            for name in names:
                try:
                    value = returned if name == RETURN_VALUE else _read(frame, name)
                except (KeyError, AttributeError):
                    raise MissingVariable(f"{Path(marker.file).name}:{marker.line}: {marker.text!r}: there is no variable {name!r} "
                                          f"once line {marker.first} has run") from None
                try:
                    captured = to_value(name, value, CAPTURE_BUDGET_BYTES - self.capture.kept_bytes)
                except Exception as exc:  # noqa: BLE001 - a value we cannot copy must not look like the script's own error
                    captured = Value(name, "other", None, "cpu", f"a {type(value).__name__} that could not be copied ({type(exc).__name__})")
                for tensor in (captured.tensor.values() if captured.kind == "dict" else [captured.tensor]) if captured.tensor is not None else ():
                    self.capture.kept_bytes += tensor.numel() * tensor.element_size()
                values.append(captured)
            self.order += 1
            site = self._call_site(frame) if marker.alternatives else None
            hits = self.hit_lists.get(id(marker))  # a Marker hashes all its fields: look it up once
            if hits is None:
                hits = self.hit_lists[id(marker)] = self.capture.hits.setdefault(marker, [])
            hits.append(Hit(self.order, values, site))

    def _call_site(self, frame) -> tuple[str, int] | None:
        """The line of the user's files that called this frame (through library frames such as nn.Module.__call__)."""
        caller = frame.f_back
        while caller is not None and caller.f_code.co_filename not in self.user_files:
            caller = caller.f_back
        return (caller.f_code.co_filename, caller.f_lineno) if caller is not None else None


def run_script(script: Path, argv: list[str], markers: list[Marker], timeout: float | None) -> Capture:
    """Run ``script`` as ``__main__`` with ``argv`` and the markers traced; never raises for the script's own errors."""
    import torch

    capture = Capture(script=script, markers=markers, sha256=hashlib.sha256(script.read_bytes()).hexdigest())
    tracer = _Tracer(capture)
    # The pages quote the code that ran, even if the script rewrites or deletes its own files.
    capture.sources = {file: Path(file).read_text(encoding="utf-8") for file in sorted({m.file for m in markers})}
    saved_argv, saved_path, saved_seed = sys.argv[:], sys.path[:], (torch.manual_seed, torch.random.manual_seed)
    saved_cwd, saved_modules = os.getcwd(), set(sys.modules)

    def recording_seed(seed):
        capture.seeds.append(int(seed))
        return saved_seed[1](seed)

    def on_alarm(signum, frame):
        raise TraceTimeout()

    previous_handler = None
    interrupted = []  # a real Ctrl-C, told apart from a KeyboardInterrupt the script raises itself

    def on_interrupt(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    previous_interrupt = signal.signal(signal.SIGINT, on_interrupt)
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.parent))
    torch.manual_seed = torch.random.manual_seed = recording_seed
    saved_exit, os._exit = os._exit, _script_exit
    watchdog = None
    if timeout:
        previous_handler = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        # A script may ignore or replace SIGALRM: a second later, raise the timeout into the main thread directly.
        watchdog = threading.Timer(timeout + 1, _raise_in, (threading.main_thread().ident, TraceTimeout))
        watchdog.daemon = True
        watchdog.start()
    children_before = _children(os.getpid())
    started = time.perf_counter()
    threading.settrace(tracer.global_trace)  # threads the script starts are traced too
    sys.settrace(tracer.global_trace)
    try:
        threads_before = set(threading.enumerate())
        runpy.run_path(str(script), run_name="__main__")
        for thread in set(threading.enumerate()) - threads_before:  # as `python SCRIPT.py` waits for them (within --timeout)
            if not thread.daemon:
                thread.join()
    except TraceTimeout:
        capture.timed_out = True
    except MissingVariable as exc:
        raise UserError(str(exc)) from None
    except SystemExit as exc:
        if exc.code not in (None, 0):
            capture.error = f"the script exited with status {exc.code}" if isinstance(exc.code, int) else f"the script exited: {exc.code}"
    except KeyboardInterrupt as exc:
        if interrupted:
            raise  # the user stopped the trace: no report (--timeout is the way to keep a partial one)
        capture.error, capture.error_at = _describe(exc, script)  # the script raised it: a failure like any other
    except BaseException as exc:  # the user's code: report it, with its line, and keep what was captured
        capture.error, capture.error_at = _describe(exc, script)
    finally:
        if sys.gettrace() != tracer.global_trace:  # a debugger, coverage or the script itself took the trace hook
            capture.warnings.append("the script replaced the trace function (sys.settrace), so lines it ran after that "
                                    "were not captured")
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        left = _children(os.getpid()) - children_before
        if left:
            _end_processes(left)
            capture.warnings.append(f"the script left {len(left)} process(es) running; the trace stopped them")
        os.chdir(saved_cwd)
        for name in set(sys.modules) - saved_modules:  # the script's own modules: the next trace imports its own again
            if str(getattr(sys.modules[name], "__file__", "") or "").startswith(str(script.parent)):
                del sys.modules[name]
        capture.seconds = time.perf_counter() - started
        if watchdog is not None:
            watchdog.cancel()
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous_handler)
        sys.argv, sys.path[:] = saved_argv, saved_path
        torch.manual_seed, torch.random.manual_seed = saved_seed
        os._exit = saved_exit
        signal.signal(signal.SIGINT, previous_interrupt)
    return capture


def _raise_in(thread_id: int, exception: type[BaseException]) -> None:
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exception))


def _children(pid: int) -> set[int]:
    """The live processes descended from ``pid`` (Linux /proc; none found elsewhere). Read from each thread's list of
    the children it started (/proc/PID/task/TID/children), a few files, where the kernel has them; else from every
    process's parent in /proc/*/stat (a file per process on the machine: milliseconds on a busy one)."""
    if not Path(f"/proc/{pid}/task/{pid}/children").exists():
        return _children_from_stat(pid)
    found, todo = set(), [pid]
    while todo:
        for listing in Path(f"/proc/{todo.pop()}/task").glob("*/children"):
            try:
                children = {int(child) for child in listing.read_text().split()}
            except (OSError, ValueError):
                continue  # the thread or the process ended meanwhile
            todo += children - found
            found |= children
    return found


def _children_from_stat(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found.add(child)
                todo.append(child)
    return found


def _end_processes(pids: set[int]) -> int:
    """Stop the processes the script started and left running (no process outlives the trace); how many there were."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = set()
        for pid in pids:
            try:
                os.kill(pid, sig)
                alive.add(pid)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + 2
        while alive and time.monotonic() < deadline:
            for pid in list(alive):
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        alive.discard(pid)
                except ChildProcessError:  # not our direct child: gone once /proc no longer lists it
                    if not Path(f"/proc/{pid}").exists():
                        alive.discard(pid)
            time.sleep(0.02)
        pids = alive
    return len(pids)


def _describe(exc: BaseException, script: Path) -> tuple[str, tuple[str, int] | None]:
    frames = traceback.extract_tb(exc.__traceback__)
    folder = str(script.parent)
    ours = [f for f in frames if f.filename.startswith(folder)]
    where = ours[-1] if ours else (frames[-1] if frames else None)
    text = f"{type(exc).__name__}: {exc}".strip()
    if where is None:
        return text, None
    return f"{text} (at {Path(where.filename).name}:{where.lineno}: {(where.line or '').strip()})", (where.filename, where.lineno)
