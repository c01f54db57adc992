"""The `nn.Module` calls a marked line makes, recorded in the traced script's own interpreter (bootstrap.py loads this
file by path: standard library only, torch taken from sys.modules once the script has imported it).

While a marked statement whose checks read its calls runs (the marker's ``calls``: the kinds they read, None: all),
one global forward pre-hook and one forward hook (torch.nn.modules.module.register_module_forward_*_hook, called also
when a module raises) are installed; they are removed as the statement's capture is taken, so code outside such lines
runs without hooks. The calls the statement makes down to depth 3 (its own modules, and what they call) of the kinds a
check can recompute (Linear, LayerNorm, Embedding, Conv2d, MultiheadAttention: PyTorch's own classes) or of the user's
own classes (defined under the script's folder; kind "user", read only where it has a LayerNorm's parameters) count
towards the MOST_CALLS kept (a Dropout only where a check names its kind: what a statement made of its input); those of
the kinds read are kept with their tensor inputs, their outputs, their parameters (each tensor written once, in a
``param`` event, and named by its number afterwards) and the attributes a recomputation needs (eps, stride, heads...).
The hit event carries them as its ``calls`` (protocol.py's call_to_serializable), and the module tensors the statement
reads by attribute (``self.pos_embedding``) as its ``reads``: ``{name: n}`` (reading/capture.py reads both). The calls
of the unmarked statements feeding a marked one are kept by reference and copied only where the marked line's hit can
read them (fed_calls.py).
"""

import collections
import functools
import inspect
import os
import sys

from . import protocol
from .protocol import ModuleKind

ATTRIBUTES = ("eps", "epsilon", "variance_epsilon", "normalized_shape", "stride", "padding", "dilation", "groups",
              "num_heads", "batch_first", "head_dim", "padding_idx")
DEPTH = 3  # the statement's own module calls, and the ones those make (a Sequential's layers)
INPUTS, OUTPUTS = ("input0", "input1", "input2"), ("output0", "output1")  # the arguments and results kept
MOST_CALLS = 24  # per statement: a marked line that runs a whole model keeps its first calls only


class CallRecorder:
    """The module calls of the marked statements that are running (nested: a marked line can call marked code)."""

    def __init__(self, results, folder, copies, fed_calls, user_modules):
        self.results = results
        self.fed_calls, self.user_modules = fed_calls, user_modules  # as bootstrap.py loaded them
        self.folder = os.path.join(os.path.abspath(folder), "")  # the script's folder: the user's own classes
        self.tensor_value, self.live_value = copies.tensor_value, copies.live_value  # in the budget; by reference
        self.running = []  # per running statement: Statement
        self.depth = 0  # module calls running, counted while the hooks are installed
        self.hooks = None  # GlobalHooks, once torch is imported
        self.params = {}  # (id(parameter), version) -> (parameter kept alive, its number)
        self.user_classes = {}  # class, and the name of a module defining one -> defined in the user's files
        self.attributes = {}  # class -> the ATTRIBUTES its instances may have besides their own __dict__'s
        self.wanted = {}  # id(the markers of a statement, the Tracer's lists, held for the run) -> their kinds
        self.fed = {}  # id(a marked statement's markers) -> {a feeding line: its calls (fed_calls.py), last run}
        self.traced_back = {}  # (id(a marked statement's markers), a feeding line) -> traced back to (fed_calls.py)
        self.taken = collections.defaultdict(int)  # a marker's index -> its hits taken (bootstrap.py ``_take``)
        self.taken_by_use = collections.defaultdict(int)  # (a shared line's marker index, ``SharedLines.use``) -> hits

    def start(self, frame, markers, feeding=False, targets=None, use=None):
        """A marked statement begins: the local tensors it reads are copied (as they are before it rebinds them), the
        calls of the kinds its checks read (all where the marker says None) recorded until ``stop`` (``feeding``: an
        unmarked statement feeding marked ones, its calls kept by reference: fed_calls.py; ``targets``: the markers
        of the statements it feeds; ``use``: a shared line's, ``_past``). Nothing is recorded once its markers are past
        the hit their checks read."""
        if _past(self, targets or (markers,), use):
            self.running.append(PAST)  # its ``stop`` gives None: no calls, nor attributes read
            self.fed.pop(id(markers), None)
            return
        torch = sys.modules.get("torch")
        wanted = self.wanted.get(id(markers), ())
        if wanted == ():
            wanted = self.wanted[id(markers)] = _wanted(markers)
        statement = Statement(self.depth, wanted, feeding)
        self.running.append(statement)
        fed = self.fed.pop(id(markers), None)  # feeders' calls (no frame), copied where a local read holds one's output
        if torch is None or not hasattr(torch, "nn"):
            return
        names, read = markers[0][1]["locals"], []
        if names:
            statement.calls.extend(_locals(frame, names, torch, self.results, self.tensor_value, read))
        if fed:
            statement.calls[:0] = self.fed_calls.resolve(fed, read, self._call, markers, self.traced_back)
        if self.hooks is None:
            self.hooks = GlobalHooks(torch, self._enter, self._leave)
        if self.hooks.installed or wanted is not None and not wanted - {ModuleKind.READ}:
            return  # hooks already installed, or none of the line's calls is read: none installed
        self.hooks.install()

    def stop(self):
        """The statement's capture is taken: its calls (the hooks removed once no marked statement runs); None for
        one past the hit read (``start``)."""
        calls = self.running.pop().calls if self.running else []
        if self.hooks is not None and self.hooks.installed and not _reads_calls(self.running):
            self.hooks.remove()
            self.depth = 0
        return calls

    def reads(self, frame, names, read):
        """The tensors held by the attributes the marked statement reads (``self.pos_embedding``: a weight passed to
        functional code), by name -> parameter number; locals are the script's activations, not weights."""
        torch = sys.modules.get("torch")
        found = {}
        if torch is None or not names:
            return found
        for name in names:
            try:  # a module's tensor attribute (a parameter, a buffer, a constant): never an activation
                value = read(frame, name)
                if not isinstance(value, torch.Tensor) or not value.is_floating_point():
                    continue  # its owner read only for a tensor (most chains read a module, a size, a method)
                owner = read(frame, name.rsplit(".", 1)[0])
            except Exception:  # noqa: BLE001 - a property that raises: not a weight
                continue
            if isinstance(owner, torch.nn.Module):
                with self.results.lock:
                    number = self._param(value, torch)
                if number is not None:
                    found[name] = number
        return found

    def _enter(self, module, args):
        self.depth += 1

    def _leave(self, module, args, *rest):
        depth = self.depth
        self.depth = depth - 1 if depth > 0 else 0  # (not max(): a call per module call while hooks are in)
        for statement in self.running:  # none keeps a call this deep, or more calls: nothing more to read of it
            if 0 < depth - statement.depth <= DEPTH and statement.counted < MOST_CALLS:
                break
        else:
            return
        kwargs, output = (rest[0] or {}, rest[1]) if len(rest) == 2 else ({}, rest[-1])  # (module, args, None) only:
        if output is None and sys.exc_info()[0] is not None:  # torch's always_call hook on a module that raised
            return  # counted out, not recorded
        kind = _torch_kind(type(module))
        if kind is ModuleKind.CONV2D and getattr(module, "padding_mode", "zeros") != "zeros":
            kind = None
        if kind is None and not self.user_modules.users(module, self.user_classes, self.folder):
            return
        kind = kind or ModuleKind.USER
        args = _in_order(type(module), args, kwargs) if kwargs and kind is not ModuleKind.USER else args
        _keep(self, module, kind, depth, args, output)

    def _call(self, module, kind, depth, args, outputs, owned, grad=None):
        """A call's record: its tensor ``args`` and ``outputs`` copied, its parameters ``owned`` ([(name, parameter)])
        numbered; ``grad``: whether gradients were on as it ran (None: now)."""
        torch = sys.modules["torch"]
        tensor, value, results = torch.Tensor, self.tensor_value, self.results
        grad = torch.is_grad_enabled() if grad is None else grad
        inputs, copied, params = [], [], {}  # loops, not comprehensions: each of those is a call the trace sees
        with results.lock:
            for name, argument in zip(INPUTS, args):
                inputs.append(value(results, name, argument, torch) if isinstance(argument, tensor) else None)
            for name, result in zip(OUTPUTS, outputs):
                copied.append(value(results, name, result, torch) if isinstance(result, tensor) else None)
            live = (kind in protocol.LIVE_KINDS and not grad  # no training step runs on these
                    and len(getattr(module, "normalized_shape", (0,))) == 1)  # a LayerNorm over the last axis
            for name, param in owned:
                number = self._param(param, torch, live)
                if number is not None:
                    params[name] = number
        return protocol.call_to_serializable(type(module).__name__, kind, depth, inputs, copied, params,
                                             _call_attrs(module, kind, self.attributes))

    def _param(self, param, torch, live=False):
        """The parameter's number; its values written once, in an event of their own (the lock held): copied, or
        (``live``) kept by reference until they are written."""
        key = (id(param), param._version)  # an optimizer's step changes it in place: a new copy
        known = self.params.get(key)
        if known is not None:
            return known[1]
        value = (live and self.live_value(self.results, "param", param, torch)
                 or self.tensor_value(self.results, "param", param, torch))
        if "array" not in value:
            return None  # past the capture budget
        number = len(self.params)
        self.params[key] = (param, number)
        self.results.event(protocol.param_to_serializable(number, value))
        return number


def _past(recorder, targets, use=None):
    """Whether every marker of ``targets`` (statements' markers) has had the hit whose calls its checks read
    (``calls_at``; 0: every hit's): the pages read that hit's calls only (reading/pages.py ``_marked``), an
    earlier one's where the line ran fewer times, so a later hit's are not copied; a shared line's counted per
    ``use`` (each snapshot's page reads that hit of its own use: running_module.py ``SharedLines.use``)."""
    taken, by_use = recorder.taken, recorder.taken_by_use
    for markers in targets:
        for index, marker in markers:
            at = marker.get("calls_at", 0)
            if not at or (by_use[(index, use)] if marker["shared_line"] else taken[index]) < at:
                return False
    return True


def _keep(recorder, module, kind, depth, args, output):
    """A module call of ``kind`` that returned ``output``, kept by each running statement of ``recorder`` (a
    CallRecorder) that reads it: by reference where the statement feeds marked ones (fed_calls.py), else copied; its
    record made once for every statement that keeps it (a marked line inside a marked line's call): the same copies and
    parameter numbers, its depth in each statement's own."""
    torch = sys.modules["torch"]
    written = owned = outputs = None
    for statement in recorder.running:
        within = depth - statement.depth
        if 0 < within <= DEPTH and statement.counted < MOST_CALLS:
            if kind is ModuleKind.DROPOUT and (statement.wanted is None or kind not in statement.wanted):
                continue  # copied only where a check names it, and not counted elsewhere: the calls kept as before
            if statement.wanted is not None and not recorder.user_modules.read(kind, statement.wanted, module, args):
                statement.counted += 1  # not read by the line's checks: not copied, counted as it ran
                continue
            try:
                if owned is None:
                    owned = _owned(module, kind)
                    outputs = output if isinstance(output, (tuple, list)) else (output,)
                call = recorder.fed_calls.pending(module, kind, within, args, outputs, owned, torch) \
                    if statement.feeding else None
                if call is None:
                    if written is None:
                        written = recorder._call(module, kind, within, args, outputs, owned)
                    call = written if written["depth"] == within else {**written, "depth": within}
                statement.calls.append(call)
            except Exception:  # noqa: BLE001 - a call we cannot copy is left out, never the script's error
                continue
            statement.counted += 1


class GlobalHooks:
    """The recorder's global forward pre-hook and forward hook (called also when a module raises), installed while a
    statement that reads its calls runs. Registered through PyTorch's API the first time; then the same entries are
    put back into, and taken out of, the global hook tables the first handles named (what a handle's ``remove``
    does): a register-and-remove pair per marked statement cost ~24 µs, as much as copying a small tensor. Through the
    API each time where this PyTorch's handles do not name their tables."""

    def __init__(self, torch, enter, leave):
        self.module, self.enter, self.leave = torch.nn.modules.module, enter, leave
        self.handles, self.entries, self.installed = (), None, False

    def install(self):
        if self.entries is None:
            self.handles = (self.module.register_module_forward_pre_hook(self.enter),
                            self.module.register_module_forward_hook(self.leave, with_kwargs=True,
                                                                         always_call=True))
        else:
            for table, key, value in self.entries:
                table[key] = value
        self.installed = True

    def remove(self):
        if self.handles:
            self.entries = _entries(self.handles)
            for handle in self.handles:
                handle.remove()
            self.handles = ()
        else:
            for table, key, _ in self.entries:
                table.pop(key, None)
        self.installed = False


def _entries(handles):
    """The (table, key, value) entries the hooks' handles stand for (torch.utils.hooks.RemovableHandle: its tables by
    weak reference), or None where they do not say."""
    entries = []
    try:
        for handle in handles:
            hooks = handle.hooks_dict_ref()
            if hooks is None or handle.id not in hooks:
                return None
            entries.append((hooks, handle.id, hooks[handle.id]))
            for ref in handle.extra_dict_ref:  # always_called: an entry of our hook where the table holds one
                table = ref()
                if table is not None and handle.id in table:
                    entries.append((table, handle.id, table[handle.id]))
    except (AttributeError, TypeError):
        return None
    return entries


class Statement:
    """A marked statement that is running: the hooks' depth when it began, its calls, the kinds of calls copied
    (None: all), how many of the calls it may keep ran, and whether it feeds marked ones (its calls kept by
    reference)."""

    __slots__ = ("depth", "wanted", "calls", "counted", "feeding")

    def __init__(self, depth, wanted, feeding=False):
        self.depth, self.wanted, self.calls, self.counted, self.feeding = depth, wanted, [], 0, feeding


# a statement started past the hit its checks read: keeps no call (its count is full) and installs no hooks
PAST = Statement(0, frozenset())
PAST.calls, PAST.counted = None, MOST_CALLS


def _owned(module, kind):
    """The parameters a call's record names: a user's module's or a leaf's own (module.named_parameters(recurse=False),
    without its generator), all of another's."""
    if kind is ModuleKind.TRANSFORMER_STACK:
        return []  # read for its layout only
    if kind is not ModuleKind.USER and module._modules:
        return list(module.named_parameters())
    owned = []
    for name, param in module._parameters.items():
        if param is not None:
            for _, other in owned:  # one parameter under two names: named once (a module has a few of its own)
                if other is param:
                    break
            else:
                owned.append((name, param))
    return owned


def _local_value(scope, name):
    """A local's value, or its entry ``name`` = ``local["key"]`` (a dict's, read by the statement with a constant key:
    reading/capture.py ``names_read``); None where there is none."""
    local, bracket, key = name.partition('["')
    value = scope.get(local)
    if not bracket:
        return value
    return value.get(key.removesuffix('"]')) if isinstance(value, dict) else None


def _locals(frame, names, torch, results, tensor_value, read):
    """The local tensors (or a tuple of up to three) the statement reads, as calls of kind "local"; each tensor also
    added to ``read``."""
    found, scope = [], frame.f_locals  # a function's locals gathered into a dict once, not per name
    tensor = torch.Tensor
    for name in names:
        value = _local_value(scope, name) if '["' in name else scope.get(name)
        if isinstance(value, tensor):  # the common case first: no tuple made, no comprehension run per name
            if not value.is_floating_point():
                continue
            read.append(value)
            with results.lock:
                outputs = [tensor_value(results, name + "0", value, torch)]
        elif isinstance(value, (tuple, list)) and 0 < len(value) <= 3 and _floating(value, tensor):
            read.extend(value)
            with results.lock:
                outputs = [tensor_value(results, f"{name}{i}", t, torch) for i, t in enumerate(value)]
        else:
            continue
        found.append(protocol.call_to_serializable(name, ModuleKind.LOCAL, 0, [], outputs, {}, {}))
    return found


def _floating(values, tensor):
    """Whether every item of ``values`` is a floating-point tensor."""
    for value in values:
        if not isinstance(value, tensor) or not value.is_floating_point():
            return False
    return True


def _call_attrs(module, kind, classes):
    """The call's ATTRIBUTES; an nn.TransformerEncoder's (-Layer's) ``batch_first``, read where the module reads it
    (its first layer's attention): the layout it takes its input in."""
    attrs = _attrs(module, classes)
    if kind is ModuleKind.USER:
        attrs[protocol.NORMS_INSIDE] = _norms_inside(module)
    if kind is ModuleKind.TRANSFORMER_STACK:
        layer = module.layers[0] if hasattr(module, "layers") else module
        attrs["batch_first"] = bool(getattr(getattr(layer, "self_attn", None), "batch_first", False))
    return attrs


def _norms_inside(module):
    """How many of a user's module's submodules are norms, by their class's name (nn.LayerNorm, nn.RMSNorm, a norm of
    the user's own): an MLP module that normalises its input itself (``nn.Sequential(nn.LayerNorm(d), ...)``) is given
    the stream by correct pre-norm code."""
    count = 0
    for inner in module.modules():
        if inner is not module and "norm" in type(inner).__name__.lower():
            count += 1
    return count


def _attrs(module, classes):
    """The ATTRIBUTES a recomputation needs, as JSON: from the instance's own __dict__, or its class's (a property:
    ``classes`` caches which a class has); a parameter, buffer or submodule is never a plain value."""
    cls = type(module)
    on_class = classes.get(cls)
    if on_class is None:
        on_class = classes[cls] = frozenset(name for name in ATTRIBUTES if hasattr(cls, name))
    own, attrs = module.__dict__, {}
    for name in ATTRIBUTES:
        if name in own:
            value = own[name]
        elif name in on_class:
            try:
                value = getattr(module, name)
            except AttributeError:
                continue
        else:
            continue
        value = _plain(value)
        if value is not None:
            attrs[name] = value
    return attrs


@functools.lru_cache(maxsize=None)
def _torch_kind(cls):
    """The kind of torch.nn's own class ``cls`` is, by name (a user's class of the same name is the user's; a quantised
    or fake-quantised Linear of torch.ao is not nn.Linear's formula); or of the torch.nn class a user's class derives
    from while keeping its ``forward`` (a layer that adds methods, hooks or attributes only, as relevance-propagation
    layers do, computes that class's formula). None for any other class."""
    for base in cls.__mro__:
        if base.__module__.startswith("torch.nn.modules."):
            kind = protocol.TORCH_MODULES.get(base.__name__)
            return kind if kind is not None and getattr(cls, "forward", None) is getattr(base, "forward", None) \
                else None
    return None


def _reads_calls(running):
    """Whether a running statement reads its module calls."""
    for statement in running:
        if statement.wanted is None or statement.wanted - {ModuleKind.READ}:
            return True
    return False


@functools.lru_cache(maxsize=None)
def _parameters_of(cls):
    """The names of ``cls.forward``'s parameters after ``self``, in order."""
    try:
        return tuple(inspect.signature(cls.forward).parameters)[1:]
    except (TypeError, ValueError):
        return ()


def _in_order(cls, args, kwargs):
    """A call's arguments as positional ones (``mha(query=q, key=k, value=v)`` is ``mha(q, k, v)``), up to the last
    of the kept inputs given; an argument left to its default is None."""
    given = []  # a loop, not a comprehension: each of those is a call a trace function of the script's sees
    for name in _parameters_of(cls)[len(args):len(INPUTS)]:
        given.append(kwargs.get(name))
    while given and given[-1] is None:
        given.pop()
    return (*args, *given)


def _wanted(markers):
    """The kinds of calls the markers of a statement read (None: all)."""
    kinds = set()  # a set, never (): the cache's "not known yet"
    for _, marker in markers:
        if marker.get("calls") is None:
            return None
        kinds.update(marker["calls"])
    return kinds


def _plain(value):
    """An attribute as JSON (numbers, booleans, tuples of them), or None."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, float)) for v in value):
        return list(value)
    return None
