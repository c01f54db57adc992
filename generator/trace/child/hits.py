"""A marked statement's hits, taken in the traced script's own interpreter (bootstrap.py loads this file by its path:
standard library only): the context manager a marked statement runs in (``Marked``), and what a hit reads once the
statement has run: the values of the names its markers name (copies.py), the module calls recorded while it ran
(module_calls.py), as one ``hit`` event a marker (protocol.py). The traced line's own cost: each hit reads its
frame's locals once (on Python 3.11 each ``frame.f_locals`` copies every local into its dict anew)."""

import functools
import os
import sys
import threading

from . import protocol


class Marked:
    """The context manager a marked statement runs in (``with __transformer_trace__.statements[n]:``): its module calls
    recorded from its start where its checks read them, its values taken once it has run, nothing when it raised.
    Called from the statement's own frame, so it keeps no state: recursion and threads share it."""

    __slots__ = ("tracer", "markers", "group", "read", "shared")

    def __init__(self, tracer, markers, group):
        self.tracer, self.markers, self.group = tracer, markers, group
        self.read = any(reads_more(marker) for _, marker in markers)  # its calls, locals or attributes read
        self.shared = any(marker["shared_line"] for _, marker in markers)  # its hits counted per use

    def __enter__(self):
        tracer = self.tracer
        if self.read and tracer.pid is not None and not (tracer.dynamo() or tracer.compiler._is_compiling_flag):
            frame = sys._getframe(1)
            tracer.calls.start(frame, self.markers, use=tracer.shared.use(frame) if self.shared else None)

    def __exit__(self, kind, value, traceback):
        tracer = self.tracer
        if tracer.dynamo() or tracer.compiler._is_compiling_flag:  # Tracer.torch_imported
            return False
        returned = tracer.returning.pop((threading.get_ident(), self.group), None) if tracer.returning else None
        if tracer.pid is None:
            return False
        if kind is not None:  # the statement did not complete: nothing was assigned
            if self.read:
                tracer.calls.stop()
                forget_copies(tracer.results)
            tracer.raised(self.markers, kind)
            return False
        take(tracer, sys._getframe(1), self.markers, returned, tracer.calls.stop() if self.read else None)
        return False


def take(tracer, frame, markers, returned=None, calls=None):
    """The hit of each of ``markers`` in ``frame`` (its statement's, its `def`'s or its `for`'s): its values, its
    ``calls`` (None: not recorded) and the attributes it reads, a ``hit`` event each."""
    if tracer.pid is None or os.getpid() != tracer.pid:
        return
    local, results, training = frame.f_locals, tracer.results, None
    if "self" in local:  # a method's: the running module's mode
        try:
            training = local["self"].training
        except AttributeError:
            pass
        if training is not True and training is not False:
            training = None
    for entry in markers:
        index, marker = entry
        read = _values(tracer, frame, local, marker, marker["names"], returned, bool(marker["fallback"]))
        if read is None:  # a name of it is not there: its fallback's names are read
            read = _values(tracer, frame, local, marker, marker["fallback"], returned, False)
        reads = {}
        if calls is not None and marker["reads"]:  # each chain's owner read too: the frame's locals, read once
            reads = tracer.calls.reads(frame, marker["reads"], functools.partial(read_name, local=local))
        site = module = None
        if marker["shared_line"]:  # the line that called it and the module running it tell its uses apart
            site, module = tracer.shared.site_and_module(frame)
            tracer.calls.taken_by_use[(index, tracer.shared.use(frame))] += 1
        with results.lock:
            values = tracer.copies.captured(results, read)
            results.order += 1
            results.event(protocol.hit_to_serializable(index, results.order, site, values, calls or [], reads, module,
                                                       training))
            tracer.calls.taken[index] += 1  # its calls are not copied past the hit read (module_calls.py ``_past``)
            if entry is markers[-1]:  # the statement taken: its copies forgotten (``forget_copies``), the lock held
                results.copied.clear()


def read_name(frame, name, local=None):
    """A name's value in ``frame`` (``local``: its f_locals, read once): a variable, an attribute chain of one, or a
    slice of one; KeyError where its variable is not there."""
    if local is None:
        local = frame.f_locals
    if "[" in name:  # "bias[:, :, :T, :T]": checked to hold names, numbers and arithmetic only (markers.split_names)
        try:
            return eval(name, frame.f_globals, local)  # noqa: S307
        except (NameError, IndexError, TypeError, ValueError) as exc:
            raise KeyError(name) from exc
    head, *attributes = name.split(".")
    scope = local
    if head not in scope:
        scope = frame.f_globals
    if head not in scope:
        raise KeyError(head)
    value = scope[head]
    for attribute in attributes:
        value = getattr(value, attribute)
    return value


def _values(tracer, frame, local, marker, names, returned, falls_back):
    """[(name, its value)] of the names a marker reads (one that raises: copies.Unreadable); None where one is not
    there and the marker ``falls_back`` (a marked `return`'s value is there where a variable names it), each name
    read once (not checked for, then read)."""
    read = []
    for name in names:
        try:
            if name == "return_value":
                if falls_back:
                    read_name(frame, name, local)  # KeyError where no variable names it
                value = returned
            elif name in local:  # a local variable: the common case, no call
                value = local[name]
            else:
                value = read_name(frame, name, local)
            read.append((name, value))
        except (KeyError, AttributeError):
            if falls_back:
                return None
            tracer.missing(marker, name)
        except Exception as exc:  # noqa: BLE001 - a property that raises: said, never the script's error
            read.append((name, tracer.copies.Unreadable(exc)))
    return read


def forget_copies(results):
    """Once a marked statement has been taken (or raised), its copies are not recognised again, an outer marked
    statement still running included (a change through ``.data`` or NumPy moves no version counter: a later line's
    read of the same memory is copied anew; the outer one's later reads are copied anew too)."""
    with results.lock:
        results.copied.clear()


def reads_more(marker):
    """Whether the checks read a marked line's module calls (None: every kind), the locals or attributes it reads."""
    return marker.get("calls") is None or bool(marker["calls"]) or bool(marker["locals"]) or bool(marker["reads"])
