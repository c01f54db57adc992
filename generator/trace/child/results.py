"""What the traced script's process captured, and its writing into the results folder (protocol.py gives the files'
format): loaded by bootstrap.py by its path (standard library only; torch only through the script's own
tensors)."""

import ctypes  # at the start: a ctypes.py beside the script is the script's (bootstrap._unshadow)
import json
import os
import sys
import threading
import time
import weakref

from . import protocol

ALIGN = 64
FLUSH_SECONDS = 0.1
GATHERED = 1 << 20  # bytes of small arrays joined into one write: a flush makes few system calls, not 2 per array
_STEP_HOOK = None  # one optimizer step pre-hook for the process: _before_a_step
_LIVE_RESULTS: "weakref.WeakSet[Results]" = weakref.WeakSet()  # the Results holding parameters kept by reference


def _before_a_step(*_):
    """Before any optimizer's step: the parameters kept by reference and not yet written are copied."""
    for results in list(_LIVE_RESULTS):
        results.copy_live()


class Results:
    """What the script's process captured: kept in memory as it happens (a copy per value, cheap in the traced line)
    and appended to the results folder's files every FLUSH_SECONDS by a low-level thread (not in threading.enumerate(),
    not waited for at exit), at the script's end, at exit and before os._exit: a process killed at --timeout loses at
    most the last FLUSH_SECONDS, even when it blocks in C. A parameter kept by reference (copies.Live) is written
    from the parameter itself, or as changed where it moved before or while it was written."""

    def __init__(self, folder, budget):
        self.folder = folder
        self.budget = budget
        self.budget_left = budget
        # the script's threads are captured too; re-entrant: a signal handler running a marked statement may
        # interrupt a capture (each event names its own copies, so an event made in between is written whole)
        self.lock = threading.RLock()
        self.write_lock = threading.Lock()
        self.arrays = open(os.path.join(folder, "tensors.bin"), "ab", buffering=0)
        self.events = open(os.path.join(folder, "events.jsonl"), "ab", buffering=0)
        _write_all(self.events, (json.dumps(protocol.header()) + "\n").encode())  # the version the reader checks
        self.pending = []  # (event, [(array description, copy)]) not written yet
        self.pending_arrays = []  # the copies of the event being made
        self.copied = {}  # the memory a copy was made of -> (a weak reference to its tensor, the copy's description)
        self.offset = 0
        self.order = 0
        self.pid = os.getpid()
        self.unwritten_live = []  # the parameters kept by reference (copies.Live) that may not be written yet
        self.watches_steps = False  # in _LIVE_RESULTS (once it keeps a parameter by reference)

    def not_copied(self, size):
        """Why a value of ``size`` bytes was not copied: larger than the whole budget, or than what is left of it."""
        if size > self.budget:
            return f"not copied: this one value is {_mib(size)}, more than the {_mib(self.budget)} a trace keeps"
        return (f"not copied: the captures already hold {_mib(self.budget - self.budget_left)} of the "
                f"{_mib(self.budget)} a trace keeps, and this value is {_mib(size)}")

    def array(self, copy, dtype, shape, nbytes, live=False):
        """Keep a copy (a CPU tensor or a NumPy array; ``live``: a parameter kept by reference, copies.Live) to write
        (the lock held); its description, whose offset is set as it is written."""
        described = protocol.array_to_serializable(dtype, shape, nbytes, live)
        self.pending_arrays.append((described, copy))
        return described

    def event(self, record):
        """Keep an event with the copies made for it (the lock held)."""
        self.pending.append((record, self.pending_arrays))
        self.pending_arrays = []

    def keep_live_through_steps(self, live):
        """A parameter kept by reference (copies.Live): copied before any optimizer's step, until it is written."""
        global _STEP_HOOK
        self.unwritten_live.append(live)
        if self.watches_steps:
            return
        self.watches_steps = True
        _LIVE_RESULTS.add(self)
        if _STEP_HOOK is None:  # as the script's `import torch` loaded it (torch.optim does), never imported here
            register = getattr(sys.modules.get("torch.optim.optimizer"), "register_optimizer_step_pre_hook", None)
            # no such hook in this PyTorch: the writer's version check says it changed
            _STEP_HOOK = register(_before_a_step) if register is not None else False

    def copy_live(self):
        with self.write_lock:  # a flush writing its batch finishes first
            with self.lock:
                for live in self.unwritten_live:
                    live.freeze()
                self.unwritten_live = []

    def flush(self):
        if os.getpid() != self.pid:
            return  # a fork()ed child writes nothing of ours
        with self.write_lock:
            with self.lock:
                pending, self.pending = self.pending, []
                self.unwritten_live = [live for live in self.unwritten_live if not live.written]
            pending.reverse()
            gathered, lines = _Gathered(self.arrays), []
            while pending:  # every copy is freed here, under the write lock: not by a thread the exit cuts short
                self._write(*pending.pop(), gathered, lines)
            gathered.write()  # the arrays before the events naming them: a kill in between leaves no event naming
            _write_all(self.events, b"".join(lines))  # an array not written

    def _write(self, record, arrays, gathered, lines):
        """One event's arrays, added to ``gathered`` at their aligned offsets; its line, to ``lines``."""
        for described, copy in arrays:
            live = copy if type(copy).__name__ == "Live" else None
            if live is not None:
                live.written = True
            if live is not None and (copy := live.current()) is None:
                described["changed"] = True  # changed in place since it was kept: its values then are gone
                continue
            padding = -self.offset % ALIGN
            if padding:
                gathered.add(b"\0" * padding)
            _add_array(gathered, copy)
            self.offset += padding + described["nbytes"]
            if live is not None and live.current() is None:  # changed while it was written: not whole
                described["changed"] = True
                continue
            described["offset"] = self.offset - described["nbytes"]
        lines.append((json.dumps(record, default=_plain_json) + "\n").encode())

    def keep_flushing(self):
        """Flush every FLUSH_SECONDS from a low-level thread of its own, for the life of this process."""
        import _thread

        def loop():
            while os.getpid() == self.pid:
                time.sleep(FLUSH_SECONDS)
                try:
                    self.flush()
                except Exception:  # noqa: BLE001 - a full disk: the end of the run says it
                    return

        _thread.start_new_thread(loop, ())

    def outcome(self, outcome):
        self.flush()
        path = os.path.join(self.folder, "outcome.json")
        with open(path + ".part", "w", encoding="utf-8") as file:
            json.dump(outcome, file)
        os.replace(path + ".part", path)


def _plain_json(value):
    """A number read while PyTorch traces (a 0-d tensor standing for a size, under torch.jit.trace): its value, else
    its text; never the script's error."""
    try:
        return value.tolist()
    except Exception:  # noqa: BLE001 - anything else: its text
        return str(value)


def _mib(size):
    return f"{size / 2**20:,.1f} MiB"


def _write_all(file, data):
    view = memoryview(data)
    while view:
        view = view[file.write(view):]


def _add_array(gathered, copy):
    """A kept copy's raw bytes, written or gathered: a NumPy array's, or a CPU tensor's (any dtype, bfloat16 included),
    read in place (a parameter kept by reference is not copied once more); a small copy's bytes (copies.SMALL_COPY)."""
    if type(copy) is bytes:
        gathered.add(copy)
        return
    if not hasattr(copy, "data_ptr"):
        gathered.add(memoryview(copy.tobytes()))
        return
    copy = copy.contiguous()  # held while its memory is written or gathered
    size = copy.numel() * copy.element_size()
    gathered.add(memoryview((ctypes.c_char * size).from_address(copy.data_ptr())).cast("B"))


class _Gathered:
    """The bytes one flush appends to a file: small pieces joined (up to GATHERED bytes) and written at once, a large
    one written as it is; never held past the flush (a fork()ed child's exit writes nothing of ours, as with an
    unbuffered file)."""

    def __init__(self, file):
        self.file, self.joined = file, bytearray()

    def add(self, data):
        if len(self.joined) + len(data) > GATHERED:
            self.write()
        if len(data) >= GATHERED:
            _write_all(self.file, data)
        else:
            self.joined += data  # copied now: the tensor it reads may be freed once added

    def write(self):
        if self.joined:
            _write_all(self.file, self.joined)
            self.joined = bytearray()
