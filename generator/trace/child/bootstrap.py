"""The traced script's own interpreter: `python bootstrap.py SPEC.json` runs SCRIPT.py as `python SCRIPT.py` would, with
its marked statements wrapped in calls to the Tracer (instrument.py; no trace function), and writes what they held
into the spec's results folder for the generator to read.

Run by file path, never imported by the generator: it imports only the standard library (torch only once the script
has imported it), so the script's own `models`, `generator` or `utils` modules are the ones it imports. What it writes
into the results folder, and the spec it reads, are protocol.py's (versioned; reading/capture.py reads them).

Only this process captures: a fork()ed child (multiprocessing, DataLoader workers) stops capturing as it starts, and
a spawned one runs the script as `__mp_main__` without this file.
"""

import sys

_AT_START = set(sys.modules)  # the modules `python SCRIPT.py` has before the script runs

import io  # noqa: E402 - after _AT_START (python has it at start)
import json  # noqa: E402
import os  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402 - imported before the script's folder is on sys.path (a traceback.py of its own)

_REAL_EXIT = os._exit
_PACKAGE = "_transformer_trace_child"  # this folder, as the script's interpreter names it (_beside)


class Tracer:
    """What the marked code calls (instrument.py compiles it so; ``__transformer_trace__`` in its globals): a marked
    statement's values read once it has run, with the module calls its checks read recorded while it runs; a marked
    `def`'s arguments on entry; a marked `for`'s variable each iteration; which marked code ran. No trace function: the
    script's other lines run exactly as Python compiled them."""

    def __init__(self, spec, results):
        self.results = results
        self.markers = spec["markers"]
        self.pid = os.getpid()
        self.statements, self.plans = [], {}  # per group of markers sharing a statement: its context manager
        self.entries, self.loops = [], []  # per marked `def`: [(index, marker)]; per marked `for`: Marked
        self.seen = set()  # the marked code that ran: (file, first line, name)
        self.cache = spec.get("cache")  # where marked files compiled with their calls are kept
        self.returning = {}  # (thread, statement group) -> the value its marked `return` returns
        self.compiling = _never  # torch.compiler.is_compiling once the script imports torch (torch_imported)
        # its halves, asked on the traced line: dynamo() or compiler._is_compiling_flag (torch_imported)
        self.dynamo, self.compiler = _never, _NoCompiler
        self.compiled = False  # whether the script called torch.compile (seed_recorder.py)
        self.user_files = {spec["script"], *(marker["file"] for marker in self.markers)}
        shared = any(marker["shared_line"] for marker in self.markers)  # what tells a shared line's uses apart
        self.shared = _beside("running_module.py").SharedLines(self.user_files) if shared else None
        self.copies = _beside("copies.py")  # the values as JSON, and their copies
        self.calls = _call_recorder(results, spec["script"], self.copies)
        self._plan()
        if "torch" in sys.modules:  # run in a process that has imported it (benchmarks/)
            self.torch_imported(sys.modules["torch"])

    def missing(self, marker, name):
        """A marked variable that is not there once its line has run: said, and the process ends (``_missing``)."""
        _missing(self.results, marker, name)

    def _plan(self):
        """instrument.Plan per marked file (by real path): its statements, `def`s and `for`s, numbered as groups."""
        instrument = _beside("instrument.py")
        by_file = {}
        for index, marker in enumerate(self.markers):
            statements, entries, loops = by_file.setdefault(marker["file"], ({}, {}, {}))
            place = entries if marker["entry_line"] else loops if marker["loop_body"] else statements
            key = marker["first"] if place is not statements else (marker["first"], marker["last"])
            place.setdefault(key, []).append((index, marker))
        for file, (statements, entries, loops) in by_file.items():
            for key, markers in statements.items():
                statements[key] = len(self.statements)
                self.statements.append(hits.Marked(self, markers, len(self.statements)))
            self.statements += _beside("fed_calls.py").feeding(self, statements, self.statements)
            for key, markers in entries.items():
                entries[key] = len(self.entries)
                self.entries.append(markers)
            for key, markers in loops.items():  # an iteration reads its calls as a statement does (Marked.read)
                loops[key] = len(self.loops)
                self.loops.append(hits.Marked(self, markers, len(self.loops)))
            shared = {first for (first, _), group in statements.items()
                      if any(marker["shared_line"] for _, marker in self.statements[group].markers)}
            self.plans[os.path.realpath(file)] = instrument.Plan(file, statements, entries, loops, shared)

    def install(self):
        """Marked modules compiled with the calls to this tracer as they are imported; the function that undoes it."""
        return _beside("instrument.py").patch_loader(self.plans, self, self.cache)

    def script_code(self, script, source, namespace):
        """The script's code: its marked statements wrapped, if it has any (this tracer set in its ``namespace``); a
        notebook's: its cells' (``run_code``)."""
        plan, instrument = self.plans.get(os.path.realpath(script)), _beside("instrument.py")
        if plan is None:  # a notebook's cells are compiled one by one all the same
            return instrument.compile_marked(source, script, None)
        namespace[instrument.HOOK] = self
        return instrument.compile_marked(source, script, plan, self.cache)

    def torch_imported(self, torch):
        """Inside code `torch.compile` traces, every call here is a no-op that its compiler folds away (it captures
        nothing there, and needs no graph break: `fullgraph=True` still compiles); nor while torch.export runs it.
        The traced line asks is_compiling's two halves itself: is_dynamo_compiling(), one frame where is_compiling
        runs two, and the flag torch.export sets (read, not called)."""
        compiler = getattr(torch, "compiler", None)
        self.compiling = getattr(compiler, "is_compiling", _never)
        dynamo = getattr(compiler, "is_dynamo_compiling", None)
        if dynamo is not None and type(getattr(compiler, "_is_compiling_flag", None)) is bool:
            self.dynamo, self.compiler = dynamo, compiler
        else:
            self.dynamo, self.compiler = self.compiling, _NoCompiler

    def stop_in_child(self):
        """After fork(): the child runs the user's code uncaptured and writes nothing of ours."""
        self.pid = None
        self.calls.running.clear()

    def entered_shared(self, code):
        """``entered``, of code holding a line shared by several snapshots: a new frame, whose caller is read anew."""
        if not (self.dynamo() or self.compiler._is_compiling_flag):
            self.shared.forget()
            self.entered(code)

    def entered(self, code):
        """Marked code begins to run (for a marker never reached: which of the marked code ran at all)."""
        if code in self.seen or self.pid is None or self.dynamo() or self.compiler._is_compiling_flag:
            return
        self.seen.add(code)
        with self.results.lock:
            self.results.event(protocol.entered_to_serializable(*code))

    def raised(self, markers, kind):
        """A marked statement raised (the script may catch it): said once per marker, for one never reached."""
        for index, _ in markers:
            if ("raised", index) not in self.seen:
                self.seen.add(("raised", index))
                with self.results.lock:
                    self.results.event(protocol.raised_to_serializable(index, kind.__name__))

    def entry(self, group):
        """A marked `def`'s arguments, as its body begins."""
        if self.pid is not None and not (self.dynamo() or self.compiler._is_compiling_flag):
            hits.take(self, sys._getframe(1), self.entries[group])

    def loop(self, group):
        """A marked `for`'s loop variable, as an iteration of its body begins."""
        if self.pid is None or self.dynamo() or self.compiler._is_compiling_flag:
            return
        frame, loop = sys._getframe(1), self.loops[group]
        if loop.read:
            self.calls.start(frame, loop.markers)
        hits.take(self, frame, loop.markers, None, self.calls.stop() if loop.read else None)

    def returned(self, group, value):
        """A marked `return`'s value, kept for its statement's exit."""
        if not (self.dynamo() or self.compiler._is_compiling_flag):
            self.returning[(threading.get_ident(), group)] = value
        return value

def _call_recorder(results, script, copies):
    """module_calls.py's recorder of the marked statements' module calls (and fed_calls.py's, of the statements feeding
    them), the script's folder holding the user's own classes."""
    return _beside("module_calls.py").CallRecorder(results, os.path.dirname(script), copies, _beside("fed_calls.py"),
                                                   _beside("user_modules.py"))


def _never():
    return False


class _NoCompiler:
    """torch.compiler's export flag, where this PyTorch has none of its own (``Tracer.torch_imported``)."""

    _is_compiling_flag = False


def _missing(results, marker, name):
    """Said once, where the generator reads it, and the process ends here: no `except BaseException` of the script's
    can swallow it and run on uncaptured."""
    results.outcome({"missing": f"{os.path.basename(marker['file'])}:{marker['line']}: {marker['text']!r}: "
                                f"there is no variable {name!r} once line {marker['first']} has run"})
    _flush_streams()
    _REAL_EXIT(3)


def _flush_streams():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def _beside(file):
    """A module of ours beside this file, loaded by its path (nothing of transformer_trace is importable in the
    script's process), once: as a module of a package of its own (``_PACKAGE``), so that it imports the protocol as
    the generator does, ``from . import protocol``."""
    name = f"{_PACKAGE}.{file.removesuffix('.py')}"
    if name not in sys.modules:
        from importlib.util import module_from_spec, spec_from_file_location

        folder = os.path.dirname(os.path.abspath(__file__))
        if _PACKAGE not in sys.modules:
            package = type(sys)(_PACKAGE)
            package.__path__ = [folder]
            sys.modules[_PACKAGE] = package
        spec = spec_from_file_location(name, os.path.join(folder, file))
        module = sys.modules[name] = module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


protocol = _beside("protocol.py")
hits = _beside("hits.py")  # what a marked statement's hit reads
Results = _beside("results.py").Results


def _flush_before_exit(results):
    """What is kept is written when the interpreter exits, and before os._exit ends the traced process there."""
    import atexit

    def exit_now(status):
        if os.getpid() == results.pid:
            results.flush()
        _REAL_EXIT(status)

    os._exit = exit_now
    atexit.register(results.flush)  # hits of threads that ran on after the script's main thread ended
    results.keep_flushing()


def main_module(script, tracer):
    """A fresh `__main__` as `python SCRIPT.py` makes it, and the script's code (compiled from its bytes: a PEP 263
    coding declaration is honoured; its marked statements wrapped)."""
    from importlib.machinery import SourceFileLoader

    module = type(sys)("__main__")
    module.__file__ = script
    module.__loader__ = SourceFileLoader("__main__", script)
    module.__builtins__ = __builtins__
    module.__spec__ = None
    module.__cached__ = None
    if "__annotations__" in vars(sys.modules["__main__"]):  # python's own `__main__` has one (3.11: `{}`)
        module.__annotations__ = {}
    with open(script, "rb") as file:
        code = tracer.script_code(script, file.read(), module.__dict__)
    return module, code


_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE: a cell's code holding a top-level await


def run_code(code, namespace):
    """The script's code run in ``namespace``; a notebook's cells one after another as IPython runs them: a cell with a
    top-level `await` is a coroutine, run to its end in one event loop the cells share (IPython's autoawait)."""
    if not isinstance(code, tuple):
        exec(code, namespace)
        return
    loop = None
    for cell in code:
        if not cell.co_flags & _CO_COROUTINE:
            exec(cell, namespace)
            continue
        if loop is None:
            import asyncio

            loop = asyncio.new_event_loop()
        loop.run_until_complete(eval(cell, namespace))  # noqa: S307 - the cell's own code


def describe(exc, folder):
    """"Type: message (at file.py:line: code)" and [file, line], the deepest frame of the student's code first: in the
    script's folder, not in an environment installed there (a .venv/ beside the script holds torch's frames)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    installed = tuple({os.path.join(p, "") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)
                       if not os.path.join(folder, "").startswith(os.path.join(p, ""))})
    ours = [f for f in frames
            if f.filename.startswith(os.path.join(folder, "")) and not f.filename.startswith(installed)]
    where = ours[-1] if ours else (frames[-1] if frames else None)
    try:
        text = f"{type(exc).__name__}: {exc}".strip()
    except Exception:  # noqa: BLE001 - the script's own __str__ failed
        text = type(exc).__name__
    text = text.removesuffix(":")
    if where is None:
        return text, None
    shown = f"{os.path.basename(where.filename)}:{where.lineno}: {(where.line or '').strip()}"
    return f"{text} (at {shown})", [where.filename, where.lineno]


def python_traceback(exc):
    """The traceback `python SCRIPT.py` prints for ``exc``: the script's frames, none of this tracer's nor of the
    import machinery's (python leaves those out too)."""
    ours = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if not frame.filename.startswith((ours, "<frozen importlib._bootstrap"))]
    asyncio = sys.modules.get("asyncio")  # the event loop running a notebook's cell (run_code), as IPython hides it
    loop = os.path.dirname(asyncio.__file__) + os.sep if asyncio is not None else None
    while loop and frames and frames[0].filename.startswith(loop):
        del frames[0]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)] if frames else []
    return "".join([*lines, *traceback.format_exception_only(type(exc), exc)]).rstrip("\n")


def _run_the_scripts_excepthook(exc):
    """The script's own ``sys.excepthook`` (a crash log), called as python calls it for an uncaught error; python's
    own prints nothing here: the generator shows the traceback."""
    hook = sys.excepthook
    if hook is sys.__excepthook__ or isinstance(exc, KeyboardInterrupt) and hook is None:
        return
    try:
        hook(type(exc), exc, exc.__traceback__)
    except BaseException:  # noqa: BLE001 - python says "Error in sys.excepthook" and goes on ending
        print("Error in sys.excepthook:", file=sys.stderr)
        traceback.print_exc()
    _flush_streams()


def _unshadow(folder):
    """The modules this tracer imported that a file in the script's folder would be under `python SCRIPT.py`
    (a json.py, a traceback.py of the student's) are forgotten by name, kept by the tracer's own references: the
    script imports its own files, as python would, and the tracer keeps the standard library's."""
    for name in [name for name in sys.modules if name not in _AT_START]:
        top = name.partition(".")[0]
        if os.path.isfile(os.path.join(folder, top + ".py")) or \
                os.path.isfile(os.path.join(folder, top, "__init__.py")):
            del sys.modules[name]


def _end_with_the_command(fd):
    """``fd`` reads a pipe only the command writes: when the command ends (even by SIGKILL), so does our group."""
    if fd is None:
        return
    import _thread
    os.set_inheritable(fd, False)

    def watch():
        while os.read(fd, 1):
            pass
        os.killpg(os.getpgrp(), 9)

    _thread.start_new_thread(watch, ())


class _LineEnd(io.TextIOWrapper):
    """The script's stdout, as python's (the same buffer, encoding and buffering), which also keeps whether what was
    written last ended a line: the generator's summary then starts on a line of its own."""

    ends_line = True

    def write(self, text):
        written = super().write(text)
        if text:
            self.ends_line = text.endswith("\n")
        return written


def _track_line_end():
    """sys.stdout (and sys.__stdout__, which scripts restore it from) as a _LineEnd over python's own buffer; the
    wrapper python made is detached so that it never writes or closes that buffer. None where stdout is not python's
    own text stream (a closed or replaced one)."""
    out = sys.stdout
    if type(out) is not io.TextIOWrapper or out is not sys.__stdout__ or out.closed:
        return None
    settings = {"encoding": out.encoding, "errors": out.errors, "line_buffering": out.line_buffering,
                "write_through": out.write_through, "newline": "\n"}
    out.flush()
    tracked = _LineEnd(out.detach(), **settings)
    tracked.mode = "w"
    sys.stdout = sys.__stdout__ = tracked  # type: ignore[misc]  # scripts restore sys.stdout from it
    return tracked


def run(spec):
    """Run the script; the process's exit status, as `python SCRIPT.py` would end (without the traceback: the
    generator names the error and its line)."""
    script = spec["script"]
    _end_with_the_command(spec.get("parent_fd"))
    results = Results(spec["results"], spec["budget"])
    tracer = Tracer(spec, results)
    sys.argv[:] = [spec["argv0"], *spec["argv"]]
    seeds = _beside("seed_recorder.py").SeedRecorder(results, tracer)
    if not sys.flags.safe_path:
        sys.path[0] = os.path.dirname(script)
        _unshadow(sys.path[0])
    tracer.install()
    module, code = main_module(script, tracer)
    bootstrap = sys.modules["__main__"]  # noqa: F841 - kept alive while the script runs as __main__
    sys.modules["__main__"] = module
    sys.meta_path.insert(0, seeds)
    os.register_at_fork(after_in_child=tracer.stop_in_child)
    _flush_before_exit(results)
    stdout = _track_line_end()
    outcome, ending = {"error": None, "error_at": None, "exit": None}, None
    started = time.perf_counter()
    try:
        run_code(code, module.__dict__)
    except SystemExit as exc:
        outcome["exit"] = exc.code if exc.code is None or isinstance(exc.code, int) else str(exc.code)
        ending = exc
    except BaseException as exc:  # the script's own error: the generator reports it with its line
        outcome["error"], outcome["error_at"] = describe(exc, os.path.dirname(script))
        outcome["traceback"] = python_traceback(exc)
        _run_the_scripts_excepthook(exc)
        ending = SystemExit(1)
    if os.getpid() == tracer.pid:  # not a fork()ed child that ran the rest of the script
        outcome["seconds"] = time.perf_counter() - started - seeds.import_seconds
        outcome["stdout_ends_line"] = stdout is None or stdout.ends_line
        results.outcome(outcome)
    if ending is not None:
        raise ending


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as spec_file:
        run({**json.load(spec_file), "parent_fd": int(sys.argv[2]) if len(sys.argv) > 2 else None})
