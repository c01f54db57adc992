"""Run a user's script as ``python SCRIPT.py`` would, in an interpreter of its own, and capture the marked values like
a debugger stepping over them.

The script runs in a new Python process (bootstrap.py, started by file path, importing nothing of ours), so its own
`models`, `generator` or `utils` modules import, the environment is the user's, and what it does to its interpreter
(tracing, default devices, closed streams, forks) stays there. The marked files are compiled there with each marked
statement wrapped in a call to the tracer (instrument.py), which reads its values once it has executed; no trace
function runs, so every other line runs at full speed. Every hit comes back through files
in a temporary folder (child/protocol.py, versioned) and is rebuilt here as the `Capture` the pages read.
"""

from __future__ import annotations

import ast
import enum
import hashlib
import json
import os
import re
import signal
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformer_trace.errors import UserError
from transformer_trace.template_cache import cache_root
from transformer_trace.trace.child import protocol
from transformer_trace.trace.child.protocol import ModuleKind, ValueKind
from transformer_trace.trace.markers import Marker, read_source
from transformer_trace.trace.reading.feeders import feeding_statements, traced_back
from transformer_trace.trace.reading.product_feeders import feeder_reads
from transformer_trace.trace.reading.unreached import unreached

if TYPE_CHECKING:
    import torch

# Past this many bytes of captured copies, later hits keep their shape and statistics only (the pages stay bounded).
CAPTURE_BUDGET_BYTES = 512 * 2**20
BOOTSTRAP = Path(__file__).resolve().parent.parent / "child" / "bootstrap.py"  # run by path: the child room


class Notice(str):
    """A warning for the overview: its text (what snapshots.json keeps) and the heading it is shown under."""

    heading: str

    def __new__(cls, heading: str, text: str) -> Notice:
        notice = super().__new__(cls, text)
        notice.heading = heading
        return notice


@dataclass
class Value:
    """One variable at one hit: a CPU copy (tensor or dict of tensors) or why there is none."""

    name: str
    kind: ValueKind
    tensor: Any = None  # torch.Tensor (CPU copy) or dict[str, torch.Tensor]
    device: str = "cpu"
    note: str = ""  # why no copy was kept, or what it was converted from


@dataclass
class ModuleCall:
    """One `nn.Module` call a marked line made (trace/child/module_calls.py records it): the module's class and
    kind ("linear", "layer_norm", "embedding", "conv2d", "multihead_attention", or "user": a class of the user's
    files), how deep in the line it ran (1: called by the line itself), its tensor inputs and outputs (None where not
    a tensor or not copied), its parameters by name and the attributes a recomputation needs (eps, stride, heads).
    ``live``: its parameters were written when the script's process flushed, not copied as it ran (a forward pass
    without gradients); trace/reading/weights.py trusts them only where they reproduce the call's own output. A call
    whose parameters changed in place before they were written has the kind "changed" and none: no check reads it."""

    module: str
    kind: ModuleKind
    depth: int
    inputs: list[torch.Tensor | None]
    outputs: list[torch.Tensor | None]
    params: dict[str, torch.Tensor | None]
    attrs: dict[str, Any]  # the module's own settings as the child wrote them (JSON: eps, stride, num_heads ...)
    live: bool = False


class Changed(enum.Enum):
    """A parameter kept by reference that changed in place before it was written: its values are gone."""

    CHANGED = "changed"


Kept = tuple["torch.Tensor | Changed | None", bool]  # a parameter's values as read, and whether written live


@dataclass
class Hit:
    order: int  # global capture order: the pipeline order of the run
    values: list[Value]
    site: tuple[str, int] | None = None  # for a line shared by several snapshots: the user's line that called it
    # and the nn.Modules running it, outermost first: [[attribute, class name, inputs, projects], ...]
    # (running_module.py)
    module: list | None = None
    calls: list[ModuleCall] = field(default_factory=list)  # the module calls the line made
    training: bool | None = None  # the mode of the nn.Module whose method ran the line (None: no module's)


@dataclass
class Capture:
    script: Path
    markers: list[Marker]
    hits: dict[Marker, list[Hit]] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None  # the exception that ended the script, with its line
    error_at: tuple[str, int] | None = None  # its file and line: the traceback's last frame in the script's folder
    error_location: str = ""  # a notebook's: that line as its cell and line ("vit.ipynb, cell 7, line 3")
    error_traceback: str = ""  # the traceback `python SCRIPT.py` prints for it
    timed_out: bool = False
    seeds: list[int] = field(default_factory=list)
    compiled: bool = False  # the script called torch.compile, whose compiled code captures nothing
    stdout_ends_line: bool = True  # the script's output on stdout ended a line (or there was none)
    raised: dict[Marker, str] = field(default_factory=dict)  # a marked statement that raised: the exception's name
    sha256: str = ""
    kept_bytes: int = 0
    warnings: list[str] = field(default_factory=list)  # what the report could not use: Notices for the overview
    told_apart: list[str] = field(default_factory=list)  # a shared line's hits assigned (shared_lines.by_caller)
    sources: dict[str, str] = field(default_factory=dict)  # each marked file as it was when the run began

    @property
    def finished(self) -> bool:
        return self.error is None and not self.timed_out


def run_script(script: Path, argv: list[str], markers: list[Marker], timeout: float | None,
               argv0: str | None = None, locals_for: frozenset[int] = frozenset(),
               calls_for: Mapping[int, frozenset[str]] | None = None,
               calls_at: Mapping[int, int] | None = None) -> Capture:
    """Run ``script`` as ``__main__`` with ``argv`` (``sys.argv[0]``: ``argv0``, else the script's path) and the markers
    traced, in its own interpreter; never raises for the script's own errors. ``locals_for``, ``calls_for``,
    ``calls_at``: what the checks read of each snapshot's line, and at which hit (see ``marker_spec``)."""
    from transformer_trace.trace.process import run_child

    capture = Capture(script=script, markers=markers, sha256=hashlib.sha256(script.read_bytes()).hexdigest())
    # The pages quote the code that ran, even if the script rewrites or deletes its own files.
    capture.sources = {file: read_source(Path(file)) for file in sorted({m.file for m in markers})}
    with tempfile.TemporaryDirectory(prefix="trace-") as folder:
        spec = {"script": str(script), "argv0": argv0 or str(script), "argv": list(argv), "results": folder,
                "budget": CAPTURE_BUDGET_BYTES,
                "markers": [marker_spec(m, locals_for, calls_for, calls_at) for m in markers],
                "cache": str(cache_root() / "instrumented")}
        (Path(folder) / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        command = [sys.executable, str(BOOTSTRAP), str(Path(folder) / "spec.json")]
        ended = run_child(command, user_environment(), timeout)
        outcome = _read_outcome(Path(folder))
        if "missing" in outcome:
            raise UserError(outcome["missing"])
        entered = _read_hits(Path(folder), capture)
    capture.timed_out = ended.timed_out
    capture.seconds = outcome.get("seconds", ended.seconds)
    capture.stdout_ends_line = outcome.get("stdout_ends_line", True) is not False
    if not ended.timed_out:
        capture.error, capture.error_at = _ending(outcome, ended.returncode)
        capture.error_traceback = outcome.get("traceback") or ""
    capture.warnings += [Notice("Marker not reached", f"{Path(m.file).name}:{m.line} {m.text!r} "
                                f"{'never completed' if m in capture.raised else 'was never reached'}: {why}")
                         for m, why in unreached(capture, entered).items()]
    if ended.left_running:
        capture.warnings.append(Notice("Processes left running", f"the script left {ended.left_running} "
                                       "process(es) running; the trace stopped them"))
    return capture


def user_environment() -> dict[str, str]:
    """The environment the command was started with: what the generator set for its own PyTorch taken out again."""
    from transformer_trace import ENVIRONMENT_ADDED

    return {key: value for key, value in os.environ.items() if ENVIRONMENT_ADDED.get(key) != value}


def marker_spec(marker: Marker, locals_for: frozenset[int] = frozenset(),
                calls_for: Mapping[int, frozenset[str]] | None = None,
                calls_at: Mapping[int, int] | None = None) -> protocol.MarkerSpec:
    """A marker as the script's interpreter reads it (bootstrap.py); ``locals_for``: the snapshots whose lines copy
    the local tensors they read (``TraceUse.reads_locals``); ``calls_for``: per snapshot, the kinds of module calls its
    line's checks read (generator/trace/__init__.py's calls_read; "read": the module tensors it reads by attribute),
    the only ones copied; None: every kind; ``calls_at``: per snapshot, the hit whose calls its checks read
    (generator/trace/__init__.py's calls_at), those of later hits not copied; None: every hit's."""
    numbers = {n for n in (marker.number, *marker.alternatives) if n is not None}  # none for a `# trace:` point
    # a shared line's hits are dealt out to its callers' snapshots (shared_lines.py): the child counts its hits per
    # use (running_module.py ``SharedLines.use``), each use's page reading that hit of its own
    hits_read = [calls_at.get(n, 0) for n in numbers] if calls_at is not None else []
    reads_locals = bool(locals_for & numbers)
    kinds = None if calls_for is None else sorted(set().union(*(calls_for.get(n, ()) for n in numbers)))
    reads_attributes = kinds is None or ModuleKind.READ in kinds
    # the file read once per marker, and what its statement reads parsed once per text and lines (cached)
    source = _source(marker) if reads_attributes or reads_locals else None
    statement = _statement_reads(source, marker.first, marker.last)
    # a raw product on a statement before it that it reads: that product's input and parameters too (product_feeders)
    fed_names, fed_chains = feeder_reads(source, marker.first, marker.last) if reads_locals else ((), ())
    return {"file": marker.file, "line": marker.line, "first": marker.first, "last": marker.last,
            "names": list(marker.names), "fallback": list(marker.fallback), "shared_line": bool(marker.alternatives),
            "text": marker.text, "entry_line": marker.entry_line, "loop_body": marker.loop_body,
            "reads": [*_copied_attributes(statement), *(chain for chain, _ in fed_chains if chain not in
                                                        statement.attributes)] if reads_attributes else [],
            "locals": [*statement.names, *(name for name in fed_names if name not in statement.names)]
            if reads_locals else [],
            "calls": kinds, "calls_at": 0 if not hits_read or 0 in hits_read else max(hits_read),
            "feeders": _feeders(source, marker) if reads_locals else [],
            "traced": sorted(_traced(source, marker)) if reads_locals else []}


def _source(marker: Marker) -> str | None:
    try:
        return read_source(Path(marker.file))
    except OSError:
        return None


def _feeders(source: str | None, marker: Marker) -> list[tuple[int, int]]:
    """The unmarked statements whose module calls the marked line's checks read (reading/feeders.py)."""
    try:
        return feeding_statements(source, marker.first, marker.last) if source is not None else []
    except ValueError:
        return []


def _traced(source: str | None, marker: Marker) -> frozenset[int]:
    """The first lines of the feeding statements traced back to (reading/feeders.py ``traced_back``): the child asks
    whether a local holds their calls' outputs rearranged, as the reader does, of these only."""
    try:
        return traced_back(source, marker.first, marker.last) if source is not None else frozenset()
    except ValueError:
        return frozenset()


def names_read(marker: Marker) -> list[str]:
    """The plain names the marked statement reads (``qkv`` of ``q, k, v = qkv.unbind(0)``), its inputs as they are
    before it runs; a name it assigns and reads (``q = q.view(...)``) included; and the entries of a local it reads by
    a constant key (``p["proj"]`` of ``linear(x, p["proj"])``: weights functional code is passed from a dict), written
    ``p["proj"]`` (the child reads the key back: bootstrap's module_calls.py ``_local_value``)."""
    return list(_statement_reads(_source(marker), marker.first, marker.last).names)


def attributes_read(marker: Marker) -> list[str]:
    """The attribute chains the marked statement reads (``self.pos_embedding``, ``self.cls_token`` of
    ``self.cls_token.expand(B, -1, -1)``): where functional code passes a weight, the tensor it passes."""
    return list(_statement_reads(_source(marker), marker.first, marker.last).attributes)


@dataclass(frozen=True)
class StatementReads:
    """What a marked statement reads: ``names_read``'s names and entries, ``attributes_read``'s chains."""

    names: tuple[str, ...]
    attributes: tuple[str, ...]
    called: frozenset[str] = frozenset()  # of ``attributes``, those read only as a call's function: never a tensor


def _copied_attributes(reads: StatementReads) -> list[str]:
    """The attribute chains whose tensors the child copies (a weight passed to functional code): ``self.proj`` of
    ``self.proj(x)`` or ``k.transpose`` of ``k.transpose(1, 2)`` is a module or a method, read at every hit for none."""
    return [chain for chain in reads.attributes if chain not in reads.called]


@lru_cache(maxsize=4096)  # a pure function of the file's text: `trace` asks per marker, a benchmark per run
def _statement_reads(source: str | None, first: int, last: int) -> StatementReads:
    tree = _statement(source, first, last)
    nodes = list(ast.walk(tree)) if tree else []
    names = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    entries = {f'{n.value.id}["{n.slice.value}"]' for n in nodes
               if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name)
               and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)
               and re.fullmatch(r"\w{1,40}", n.slice.value)}
    chains: list[str] = []
    functions = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    called: set[str] = set()  # whole chains read as a call's function
    uncalled: set[str] = set()  # and those read otherwise
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            parts: list[str] = []
            whole = node
            while isinstance(node, ast.Attribute):
                parts.insert(0, node.attr)
                node = node.value
            if isinstance(node, ast.Name):  # every prefix: self.cls_token of self.cls_token.expand
                chains += [".".join([node.id, *parts[:n]]) for n in range(1, len(parts) + 1)]
                (called if id(whole) in functions else uncalled).add(chains[-1])
    return StatementReads((*sorted(names)[:6], *sorted(entries)[:3]), tuple(sorted(set(chains))[:12]),
                          frozenset(called - uncalled))


def _statement(source: str | None, first: int, last: int) -> ast.Module | None:
    if source is None:
        return None
    try:
        lines = _lines(source)[first - 1:last]
        return ast.parse("\n".join(line.strip() if i == 0 else line for i, line in enumerate(lines)))
    except (SyntaxError, ValueError):
        return None


@lru_cache(maxsize=8)
def _lines(source: str) -> list[str]:
    return source.splitlines()


def _read_outcome(folder: Path) -> protocol.Outcome:
    try:
        return json.loads((folder / "outcome.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):  # ended before its main thread did: os._exit, a signal, --timeout
        return {}


def _ending(outcome: protocol.Outcome, returncode: int | None) -> tuple[str | None, tuple[str, int] | None]:
    """The error that ended the script (None when it finished), and its line."""
    if outcome.get("error"):
        at = outcome.get("error_at")
        return outcome["error"], (at[0], at[1]) if at else None
    if "exit" in outcome:
        code = outcome["exit"]
        if code in (None, 0):
            return None, None
        if isinstance(code, int):
            return f"the script exited with status {code}", None
        return f"the script exited: {code}", None
    if returncode is not None and returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        return f"the script was ended by signal {name}", None
    if returncode:  # os._exit(status)
        return f"the script exited with status {returncode}", None
    return None, None


def _read_hits(folder: Path, capture: Capture) -> list[tuple[str, int, str]]:
    """The hits of events.jsonl, in order, as `Hit`s of ``capture.markers`` (a line cut short by a kill is left out);
    the marked code that ran: (file, its first line, its name) each. A folder of another protocol version is refused
    (a UserError)."""
    entered: list[tuple[str, int, str]] = []
    params: dict[int, Kept] = {}
    arrays = Arrays((folder / "tensors.bin").read_bytes() if (folder / "tensors.bin").exists() else b"")
    lines = (folder / "events.jsonl").read_bytes().splitlines() if (folder / "events.jsonl").exists() else []
    try:
        for event in _events(lines):
            if isinstance(event, protocol.Seed):
                capture.seeds.append(event.seed)
            elif isinstance(event, protocol.Compiled):
                capture.compiled = True
            elif isinstance(event, protocol.Entered):
                entered.append((event.file, event.line, event.name))
            elif isinstance(event, protocol.Raised):
                capture.raised.setdefault(capture.markers[event.marker], event.exception)
            elif isinstance(event, protocol.Param):
                array = event.value.array
                params[event.number] = (Changed.CHANGED if array is not None and array.changed
                                        else _value(event.value, arrays).tensor, bool(array and array.live))
            elif isinstance(event, protocol.Hit):
                capture.hits.setdefault(capture.markers[event.marker], []).append(_hit(event, arrays, params, capture))
    except protocol.ProtocolError as exc:
        raise UserError(str(exc)) from None
    return entered


def _events(lines: list[bytes]) -> Iterator[protocol.Event]:
    """The events of events.jsonl's lines, once its first has named this protocol's version."""
    checked = False
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:  # cut short by a kill
            continue
        if not checked:
            protocol.check_header(record)
            checked = True
            continue
        yield protocol.event_from_serializable(record)


def _hit(event: protocol.Hit, arrays: Arrays, params: dict[int, Kept], capture: Capture) -> Hit:
    values = [_value(entry, arrays) for entry in event.values]
    for value in (v for v in values if v.tensor is not None):
        tensors = value.tensor.values() if value.kind == protocol.ValueKind.DICT else [value.tensor]
        capture.kept_bytes += sum(t.numel() * t.element_size() for t in tensors)
    calls = [_call(call, arrays, params) for call in event.calls]
    calls += [ModuleCall(name, ModuleKind.READ, 1, [], [], {"weight": _param(params, number)}, {})
              for name, number in event.reads.items()]  # weights passed to functional code
    return Hit(event.order, values, event.site, event.module, calls, event.training)


def _param(params: dict[int, Kept], number: int) -> torch.Tensor | None:
    value = params.get(number, (None, False))[0]
    return None if isinstance(value, Changed) else value


def _call(call: protocol.Call, arrays: Arrays, params: dict[int, Kept]) -> ModuleCall:
    def tensors(entries: tuple[protocol.Value | None, ...]) -> list[torch.Tensor | None]:
        return [_value(entry, arrays).tensor if entry else None for entry in entries]

    # a class or attribute name is the user's text: one the pages can quote as code, else said without it
    # (or a dict's entry the line read by a constant key: names_read)
    module = call.module if re.fullmatch(r'[A-Za-z_][\w.]{0,79}(\["\w{1,40}"\])?', str(call.module)) else "module"
    own = [params.get(number, (None, False)) for number in call.params.values()]
    if any(isinstance(value, Changed) for value, _ in own):  # its weights then are gone: no check may read other ones
        return ModuleCall(module, ModuleKind.CHANGED, call.depth, [], [], {}, {})
    found = ModuleCall(module, call.kind, call.depth, tensors(call.inputs), tensors(call.outputs),
                       {name: value for name, (value, _) in zip(call.params, own) if not isinstance(value, Changed)},
                       call.attrs,
                       live=any(live for _, live in own))
    if found.live and not _reproduces(found):  # changed in place without its version counter (`weight.data.add_`)
        return ModuleCall(module, ModuleKind.CHANGED, call.depth, [], [], {}, {})
    return found


def _reproduces(call: ModuleCall) -> bool:
    """Whether the parameters written for a Linear or LayerNorm call (kept by reference, written after it ran)
    reproduce the output it gave from its whole input (in float32: a test of what ran, not of the formula). A change
    they survive leaves this call's outputs as they were, so it cannot turn correct code's check red: that check reads
    the same input."""
    import torch.nn.functional as F

    from transformer_trace.checks import close, judged_at

    x, y = (call.inputs or [None])[0], (call.outputs or [None])[0]
    weight, bias = call.params.get("weight"), call.params.get("bias")
    if x is None or y is None or not x.is_floating_point() or not y.is_floating_point() or x.dim() == 0:
        return False
    as_float = (lambda t: t.float() if t is not None else None)  # noqa: E731
    try:
        if call.kind == ModuleKind.LINEAR:
            if weight is None:
                return False
            expected = F.linear(x.float(), weight.float(), as_float(bias))
        else:
            expected = F.layer_norm(x.float(), x.shape[-1:], as_float(weight), as_float(bias),
                                    float(call.attrs.get("eps", 1e-5)))
        actual = y.float().reshape(expected.shape)
    except (RuntimeError, ValueError, TypeError, AttributeError):  # not the formula's shapes: not trusted
        return False
    dtypes = {x.dtype, y.dtype} | {t.dtype for t in (weight, bias) if t is not None}
    with judged_at(dtypes):
        return close(actual.double(), expected.double(), "")[0]


def _value(entry: protocol.Value, arrays: Arrays) -> Value:
    name, kind, device, note = entry.name, entry.kind, entry.device, entry.note
    try:
        if entry.array is not None:  # view: the shape of this value, where it reads a copy made of another shape
            array = _array(entry.array, arrays)
            return Value(name, kind, array.reshape(entry.view) if entry.view is not None else array, device, note)
        if entry.entries is not None:
            return Value(name, kind, {key: _array(array, arrays) for key, array in entry.entries}, device, note)
        if kind in (ValueKind.SCALAR, ValueKind.INTS):
            import torch

            dtype = torch.long if kind == ValueKind.INTS else None
            return Value(name, kind, torch.tensor(entry.data, dtype=dtype), device, note)
    except (ValueError, TypeError, RuntimeError, OverflowError) as exc:
        if kind == ValueKind.INTS:  # "a list of ints" that is not a tensor's shape (ragged, or past int64)
            shown = note.removesuffix(" of ints")
            return Value(name, ValueKind.OTHER, None, "cpu", f"{shown}, which a page cannot show")
        return Value(name, ValueKind.OTHER, None, "cpu", f"a value that could not be copied ({type(exc).__name__})")
    return Value(name, kind, None, device, note)


class Arrays(bytearray):
    """tensors.bin's bytes, and the offsets read so far: a copy two values name (the same tensor read twice while one
    marked line ran, copied once) is read as two tensors, so that changing one never changes the other."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.read: set[int] = set()


def _array(array: protocol.Array, arrays: Arrays) -> torch.Tensor:
    import torch

    dtype, shape, offset, nbytes = array.dtype, array.shape, array.offset, array.nbytes
    if offset is None:  # written as changed, or never written: no values to read
        raise TypeError("an array with no bytes written")
    if dtype.startswith("numpy:"):
        import numpy as np

        numpy_dtype = np.dtype(dtype.removeprefix("numpy:"))
        values = np.frombuffer(arrays, dtype=numpy_dtype, count=nbytes // numpy_dtype.itemsize, offset=offset)
        return torch.from_numpy(values.reshape(shape).copy())
    torch_dtype = getattr(torch, dtype.removeprefix("torch."))
    count = nbytes // torch.empty((), dtype=torch_dtype).element_size()
    tensor = torch.frombuffer(arrays, dtype=torch_dtype, count=count, offset=offset).reshape(shape)
    if offset in arrays.read:
        return tensor.clone()
    arrays.read.add(offset)
    return tensor
