"""The wire between a trace's two processes, versioned: what the traced script's interpreter (the child room) writes
into the results folder and the generator (reading/capture.py, the only reader) reads back. Standard library only:
the child loads this file by its path (bootstrap.py), the generator imports it (transformer_trace.trace.child.protocol).

The child writes with the ``*_to_serializable`` builders (plain dicts, cheap on the traced line); the reader turns
each record back into a frozen object with the ``*_from_serializable`` readers, which refuse what they do not know
(``ProtocolError``), in the manner of pytest's report_to_serializable / report_from_serializable pair. A change to
what is written raises PROTOCOL_VERSION; the reader refuses a folder of another version (coverage.py's SCHEMA_VERSION).

The results folder:

- ``spec.json`` (from the generator): script, argv0, argv, results folder, budget (bytes of copies), cache (a folder
  for the marked files' compiled code, instrument.py), markers
  ([{file, line, first, last, names, fallback, shared_line, text, entry_line, loop_body, reads, locals, calls,
  calls_at, feeders}], a hit names its marker by index; the last five: what the checks read of the line and of the
  unmarked statements feeding it, and up to which hit, module_calls.py).
- ``tensors.bin``: the raw bytes of every copied array, each at an offset aligned to 64 bytes (the same memory read
  twice is copied once: copies.py).
- ``events.jsonl``: one JSON object a line, each with its ``kind`` (``EventKind``); the first names the version
  (``{"kind": "protocol", "version": n}``). Written every 0.1 s (results.py: a process killed at --timeout keeps all
  but the last 0.1 s); a line cut short by a kill is left out by the reader.
- ``outcome.json``, written once the script's main thread ends: ``{"error", "error_at", "exit", "seconds"}``, or
  ``{"missing": message}`` when a marked variable does not exist (then the process ends at once: the script cannot
  catch it).

Teaching the trace a new module kind: a ``ModuleKind`` value (and its PyTorch class in ``TORCH_MODULES``), which the
child's module_calls.py then records; reading/weights.py reads a call of that kind for a check that names it in
``TRACE.calls`` (docs/how-it-works.md, "The trace's rooms").
"""

import enum
from dataclasses import dataclass
from typing import TypedDict

PROTOCOL_VERSION = 8  # 1: the unversioned format told events apart by the key present; 3: RAISED; 4: calls_at;
# 5: a hit's ``training``; 6: the kind "transformer_stack" (its batch_first); 7: the kind "max_pool2d"; 8: a shared
# line's calls_at counted per use

# A notebook's script (trace/notebook.py writes it): its first line names the notebook, and each cell starts after a
# line of its own; the script's interpreter runs each cell as IPython runs it (instrument.py, bootstrap.py).
NOTEBOOK_HEADER = "# generator trace: the code cells of {name} in order, each after a `# %% cell N` line"
CELL_LINE = "# %% cell {number}"


class _Word(str, enum.Enum):
    """A word of the wire: equal to, hashed as and written (JSON, f-strings) as its text."""

    def __str__(self):
        return str.__str__(self)

    def __format__(self, spec):
        return str.__format__(self, spec)


class EventKind(_Word):
    PROTOCOL = "protocol"  # the first line: which version wrote the file
    HIT = "hit"  # a marked line's values once it has run, with the module calls it made
    PARAM = "param"  # a module parameter's values, written once and named by its number afterwards
    SEED = "seed"  # the script called torch.manual_seed(n)
    COMPILED = "compiled"  # the script called torch.compile (its compiled code captures nothing)
    ENTERED = "entered"  # marked code that ran (why a marker was not reached)
    RAISED = "raised"  # a marked statement raised before it completed (the first time, per marker)


class ValueKind(_Word):
    TENSOR = "tensor"  # a tensor or NumPy array: ``array`` where copied, else why not in ``note``
    INTS = "ints"  # a (nested) list or tuple of ints: ``data``
    SCALAR = "scalar"  # a bool, int or float: ``data``
    DICT = "dict"  # a dict of tensors: ``entries``
    OTHER = "other"  # anything else: ``note`` says what


class ModuleKind(_Word):
    """What a recorded module call is: the recomputation a check may do with it."""

    LINEAR = "linear"
    LAYER_NORM = "layer_norm"
    EMBEDDING = "embedding"
    CONV2D = "conv2d"
    MAX_POOL2D = "max_pool2d"  # a convolutional tokenizer's pooling (CCT): the map its line's tokens are made of
    MULTIHEAD_ATTENTION = "multihead_attention"
    DROPOUT = "dropout"  # recorded only where a check names it: its output is what a statement made of its input
    # nn.TransformerEncoder / -Layer, recorded only where a check names it, without its parameters: the layout it
    # reads its input in (``batch_first``: its fast path calls no module of its own a record could show)
    TRANSFORMER_STACK = "transformer_stack"
    USER = "user"  # a module of a class defined in the user's own files
    LOCAL = "local"  # not a call: a local tensor the marked line reads, as it was before the line ran
    READ = "read"  # not a call: a module tensor the line reads by attribute (a weight passed to functional code)
    CHANGED = "changed"  # set by the reader: a call whose parameters changed in place before they were written
    # Asked for, never recorded: a user's module readable as a LayerNorm (a gain and a bias of its input's width),
    # one with no parameters or modules of its own (a rearrange), one readable as a projection (a weight matrix with
    # an axis of its input's width, at most a bias besides, no modules of its own: whisper's Linear, GPT-2's Conv1D),
    # one readable as an embedding (a table its integer input indexes: DeepSeek-V3's ParallelEmbedding)
    USER_NORM = "user_norm"
    USER_LEAF = "user_leaf"
    USER_LINEAR = "user_linear"
    USER_EMBEDDING = "user_embedding"  # one whose only parameter is a table (V, C), called with integer ids


# PyTorch's own classes (torch.nn.modules.*) by name, and the kind a call of one is recorded as
TORCH_MODULES = {"Linear": ModuleKind.LINEAR, "NonDynamicallyQuantizableLinear": ModuleKind.LINEAR,
                 "LayerNorm": ModuleKind.LAYER_NORM, "Embedding": ModuleKind.EMBEDDING, "Conv2d": ModuleKind.CONV2D,
                 "MaxPool2d": ModuleKind.MAX_POOL2D,
                 "MultiheadAttention": ModuleKind.MULTIHEAD_ATTENTION, "Dropout": ModuleKind.DROPOUT,
                 "TransformerEncoder": ModuleKind.TRANSFORMER_STACK,
                 "TransformerEncoderLayer": ModuleKind.TRANSFORMER_STACK}
# whose parameters are kept by reference in a forward pass without gradients (copies.Live): the reader trusts them
# only where they reproduce the call's own output (reading/capture.py)
LIVE_KINDS = frozenset({ModuleKind.LINEAR, ModuleKind.LAYER_NORM})


class ProtocolError(ValueError):
    """A results folder this reader cannot read: another version, or a record it does not know."""


# The writer's side: plain dicts, JSON as they are (the child builds one per value on the traced line).

def header():
    return {"kind": EventKind.PROTOCOL, "version": PROTOCOL_VERSION}


def array_to_serializable(dtype, shape, nbytes, live=False):
    """A copied array: dtype ("torch.float32" or "numpy:<dtype>"), shape, bytes; its offset in tensors.bin is set
    when it is written (None until then); ``live``: a parameter kept by reference, written from the parameter itself,
    with ``changed`` (and no offset) where it changed in place before it was written."""
    described = {"dtype": dtype, "shape": list(shape), "offset": None, "nbytes": nbytes}
    if live:
        described["live"] = True
    return described


def value_to_serializable(name, kind, device, note, array=None, view=None, entries=None, data=None):
    """One variable's value: ``array`` (a copy; ``view``: its own shape, where it reads a copy made of another
    shape), ``entries`` ([{key, array}]: a dict of tensors) or ``data`` (a JSON number or nested list)."""
    value = {"name": name, "kind": kind, "device": device, "note": note}
    if array is not None:
        value["array"] = array
        if view is not None:
            value["view"] = view
    elif entries is not None:
        value["entries"] = entries
    elif data is not None:
        value["data"] = data
    return value


def tensor_copy_to_serializable(name, dtype, shape, nbytes, live=False):
    """value_to_serializable(name, "tensor", "cpu", "", array_to_serializable(dtype, shape, nbytes, live)) in one
    call: the child's common case, a CPU tensor copied (its description made per tensor on the traced line)."""
    array = {"dtype": dtype, "shape": list(shape), "offset": None, "nbytes": nbytes}
    if live:
        array["live"] = True
    return {"name": name, "kind": ValueKind.TENSOR, "device": "cpu", "note": "", "array": array}


def shared_copy_to_serializable(name, array, view=None):
    """value_to_serializable(name, "tensor", "cpu", "", array, view) in one call: a CPU tensor whose memory another
    value of the statement copied already (``array``: that copy; ``view``: its own shape, where it differs)."""
    value = {"name": name, "kind": ValueKind.TENSOR, "device": "cpu", "note": "", "array": array}
    if view is not None:
        value["view"] = view
    return value


FED_AT = "fed_at"  # a call's attribute: the line of the unmarked statement that made it (fed_calls.py Feeding)
# a user's module call's attribute: how many of its submodules are norms, by class name (module_calls.py; a sublayer
# given the stream itself is a pre-norm block's bug only where no norm runs inside it: reading/sublayer_input.py)
NORMS_INSIDE = "norms_inside"


def call_to_serializable(module, kind, depth, inputs, outputs, params, attrs):
    """One module call a marked line made: its class name, kind, depth in the line (1: called by the line itself),
    its tensor inputs and outputs (values, or None), its parameters by name -> number (a ``param`` event each) and
    the attributes a recomputation needs (eps, stride, heads...)."""
    return {"module": module, "kind": kind, "depth": depth, "inputs": inputs, "outputs": outputs, "params": params,
            "attrs": attrs}


def hit_to_serializable(marker, order, site, values, calls, reads, module=None, training=None):
    """A marked line's values once it ran: its marker's index, the global capture order, the user's line that called
    a shared line and the modules running it (``module``: running_module.py), the module calls it made, the module
    tensors it read by attribute (name -> parameter number) and, where the line runs in a method of an nn.Module,
    that module's ``training`` flag (a dropout the line applies is active in training mode only)."""
    event = {"kind": EventKind.HIT, "marker": marker, "order": order, "site": site, "values": values,
             "calls": calls, "reads": reads}
    if module is not None:
        event["module"] = module
    if training is not None:
        event["training"] = training
    return event


def param_to_serializable(number, value):
    return {"kind": EventKind.PARAM, "number": number, "value": value}


def seed_to_serializable(seed):
    return {"kind": EventKind.SEED, "seed": seed}


def compiled_to_serializable():
    return {"kind": EventKind.COMPILED}


def entered_to_serializable(file, line, name):
    return {"kind": EventKind.ENTERED, "file": file, "line": line, "name": name}


def raised_to_serializable(marker, exception):
    return {"kind": EventKind.RAISED, "marker": marker, "exception": exception}


# The parent's files for the child and the child's ending, as JSON objects of these keys.

class MarkerSpec(TypedDict):
    """One marker as spec.json hands it to the child (trace/reading/capture.py marker_spec writes it, bootstrap.py
    reads it)."""

    file: str
    line: int
    first: int  # the marked statement's lines
    last: int
    names: list[str]  # the variables to read once it ran
    fallback: list[str]  # read instead when one of ``names`` does not exist
    shared_line: bool
    text: str
    entry_line: int  # a marker on a `def` line: where the function's code starts (0: none)
    loop_body: tuple[int, int] | None  # a marker on a `for` line: its body's lines (a JSON list)
    reads: list[str]  # attribute chains whose tensors are copied
    locals: list[str]  # names whose values are copied before the line runs
    calls: list[str] | None  # the module kinds whose calls are copied (None: every kind)
    calls_at: int  # the hit the checks read those of: calls, locals, attributes and feeders copied up to it (0: all;
    # a shared line's: that hit of each use)
    feeders: list[tuple[int, int]]  # unmarked statements whose calls go with its next hit (reading/feeders.py)
    traced: list[int]  # the first lines of those traced back to: their calls' outputs may be read rearranged


class Outcome(TypedDict, total=False):
    """outcome.json: how the script's main thread ended (bootstrap.py writes it); absent keys: not known."""

    error: str | None  # the exception that ended the script, with its line
    error_at: tuple[str, int] | None  # its file and line (a JSON list)
    exit: int | str | None  # a SystemExit's code
    traceback: str
    seconds: float
    missing: str  # the script refused before it ran: a marker the child could not place
    stdout_ends_line: bool  # the script's last write to stdout ended a line (the summary then needs no newline first)


# The reader's side: frozen objects, or ProtocolError.

@dataclass(frozen=True)
class Array:
    dtype: str
    shape: tuple[int, ...]
    offset: int | None  # None where it was not written
    nbytes: int
    live: bool = False
    changed: bool = False


@dataclass(frozen=True)
class Value:
    name: str
    kind: ValueKind
    device: str
    note: str
    array: Array | None = None
    view: tuple[int, ...] | None = None  # its own shape, where it reads a copy made of another shape
    entries: tuple[tuple[str, Array], ...] | None = None
    data: object = None  # a JSON number or nested list


@dataclass(frozen=True)
class Call:
    module: str
    kind: ModuleKind
    depth: int
    inputs: tuple[Value | None, ...]
    outputs: tuple[Value | None, ...]
    params: dict[str, int]  # name -> parameter number
    attrs: dict[str, object]


@dataclass(frozen=True)
class Hit:
    marker: int
    order: int
    site: tuple[str, int] | None
    values: tuple[Value, ...]
    calls: tuple[Call, ...]
    reads: dict[str, int]  # attribute chain -> parameter number
    # [[attribute, class name, inputs ("same", "differ" or None), projects (bool), holds ("attention", "mlp" or None:
    # the innermost's sublayer)], ...]: running_module.py
    module: list[list[str | bool | None]] | None = None
    training: bool | None = None  # the running module's mode, where the line runs in a method of one


@dataclass(frozen=True)
class Param:
    number: int
    value: Value


@dataclass(frozen=True)
class Seed:
    seed: int


@dataclass(frozen=True)
class Compiled:
    pass


@dataclass(frozen=True)
class Entered:
    file: str
    line: int
    name: str


@dataclass(frozen=True)
class Raised:
    marker: int
    exception: str  # its class's name


Event = Hit | Param | Seed | Compiled | Entered | Raised


def check_header(record):
    """The first record of events.jsonl; ProtocolError (one line) unless it names this version."""
    found = record.get("version") if isinstance(record, dict) and record.get("kind") == EventKind.PROTOCOL else None
    if found != PROTOCOL_VERSION:
        written = f"protocol version {found}" if found is not None else "a format without a protocol version"
        raise ProtocolError(f"the trace's results were written in {written}, and this transformer_trace reads "
                            f"version {PROTOCOL_VERSION}: the script ran under another version of it")


def array_from_serializable(record):
    try:
        return Array(str(record["dtype"]), tuple(record["shape"]), record["offset"], int(record["nbytes"]),
                     bool(record.get("live")), bool(record.get("changed")))
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"an array record without {exc}") from exc


def value_from_serializable(record):
    try:
        kind = ValueKind(record["kind"])
        array = array_from_serializable(record["array"]) if "array" in record else None
        entries = (tuple((str(e["key"]), array_from_serializable(e["array"])) for e in record["entries"])
                   if "entries" in record else None)
        return Value(record["name"], kind, record["device"], record["note"], array,
                     tuple(record["view"]) if "view" in record else None, entries, record.get("data"))
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"a value record the reader does not know ({type(exc).__name__}: {exc})") from exc


def call_from_serializable(record):
    def values(entries):
        return tuple(value_from_serializable(entry) if entry else None for entry in entries)

    try:
        return Call(record["module"], ModuleKind(record["kind"]), int(record["depth"]), values(record["inputs"]),
                    values(record["outputs"]), dict(record["params"]), dict(record["attrs"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"a module call record the reader does not know ({type(exc).__name__}: {exc})") from exc


def _flag(value):
    if value is None or isinstance(value, bool):
        return value
    raise ProtocolError(f"a hit's training flag that is not a bool ({value!r})")


def event_from_serializable(record):
    """One line of events.jsonl (after its header) as its event object."""
    try:
        kind = EventKind(record["kind"])
        if kind is EventKind.HIT:
            site = record["site"]
            return Hit(int(record["marker"]), int(record["order"]), (site[0], site[1]) if site else None,
                       tuple(value_from_serializable(v) for v in record["values"]),
                       tuple(call_from_serializable(c) for c in record["calls"]), dict(record["reads"]),
                       record.get("module"), _flag(record.get("training")))
        if kind is EventKind.PARAM:
            return Param(int(record["number"]), value_from_serializable(record["value"]))
        if kind is EventKind.SEED:
            return Seed(int(record["seed"]))
        if kind is EventKind.COMPILED:
            return Compiled()
        if kind is EventKind.ENTERED:
            return Entered(record["file"], int(record["line"]), record["name"])
        if kind is EventKind.RAISED:
            return Raised(int(record["marker"]), str(record["exception"]))
    except ProtocolError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"an event the reader does not know ({type(exc).__name__}: {exc})") from exc
    raise ProtocolError("a second protocol header")
