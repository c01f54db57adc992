"""The module calls of the unmarked statements that feed marked ones (reading/feeders.py), recorded in the traced
script's own interpreter (bootstrap.py loads this file by path: standard library only, torch from sys.modules).

A feeding statement runs in a ``Feeding`` context manager; while it runs, module_calls.py's recorder keeps each call of
the kinds the first marked statement's checks read as a ``PendingCall``: references to its tensors and their version
counters, nothing copied. The marked statement's next start decides which of them its hit carries (``resolve``): the
reader keeps a fed call only where a local tensor the marked line read holds its output as it is, or rearranged (or
one part of it split on its last axis) where the statement was traced back to (feeders.py ``as_read``), or an
attention module such a statement called, so only those are copied, then, and the rest are forgotten (a feeding
self-attention's projections, its scores, whose outputs no local holds: most of them). A tensor changed in place
between its call and the marked statement (its version counter or its memory moved) cannot be copied as the call saw
it: that call is left out, as one that cannot be copied is. Where a version counter cannot be read (a tensor made
under torch.inference_mode()), the call is copied as it returns, as a marked line's own calls are.

This is the plan of what a feeding statement records: ``PendingCall`` holds what the recorder needs to write a call
later (module_calls.py ``CallRecorder._call``); a new recording on feeding statements (another kind of call, its
attention inputs) adds to what ``pending`` keeps and ``resolve`` copies, and keeps the rule that only what a check can
read is copied.
"""

import sys

from . import protocol

# the inputs and outputs a call's record keeps (module_calls.py INPUTS and OUTPUTS)
KEPT_INPUTS, KEPT_OUTPUTS = 3, 2


def feeding(tracer, statements, groups):
    """The ``Feeding`` context managers of one file's unmarked statements that feed its marked ones (the markers'
    ``feeders``), numbered after ``groups`` and added to ``statements`` (span -> group); a span that overlaps a
    marked statement is its own, not a feeder."""
    added, by_span = [], {}
    for group in list(statements.values()):
        marked = groups[group]
        for first, last in {tuple(span) for _, marker in marked.markers for span in marker.get("feeders") or ()}:
            if (first, last) not in by_span and any(a <= last and first <= b for a, b in statements):
                continue
            if (first, last) not in by_span:
                by_span[(first, last)] = feeder = Feeding(tracer, marked.markers, first)
                statements[(first, last)] = len(groups) + len(added)
                added.append(feeder)
            by_span[(first, last)].targets.append(marked.markers)
    return added


class Feeding:
    """The context manager an unmarked statement that feeds marked ones runs in: its module calls of the kinds the
    first marked one's checks read, kept without its values or locals (``PendingCall``s), handed to each marked
    statement's next start (``CallRecorder.fed``); nothing where it raised."""

    __slots__ = ("tracer", "markers", "targets", "line", "shared")

    def __init__(self, tracer, markers, line):
        self.tracer, self.targets, self.line = tracer, [], line
        self.markers = [(index, {**marker, "locals": [], "reads": []}) for index, marker in markers]
        self.shared = None  # whether a statement it feeds is a shared line's: its hits counted per use (below)

    def __enter__(self):
        tracer = self.tracer
        # is_compiling's two halves asked here, as a marked statement asks them (bootstrap.Tracer.torch_imported):
        # is_compiling itself is three frames a feeding statement's every run paid for
        if tracer.pid is not None and not (tracer.dynamo() or tracer.compiler._is_compiling_flag):
            # no frame: a feeding statement's locals are not read (its markers' "locals" are empty); the use of the
            # shared line it feeds, read from its own frame, the one the marked line runs in (read once, cached)
            if self.shared is None:
                self.shared = any(marker["shared_line"] for target in self.targets for _, marker in target)
            use = tracer.shared.use(sys._getframe(1)) if self.shared else None
            tracer.calls.start(None, self.markers, feeding=True, targets=self.targets, use=use)

    def __exit__(self, kind, value, traceback):
        tracer = self.tracer
        if tracer.pid is None or tracer.dynamo() or tracer.compiler._is_compiling_flag:
            return False
        calls = tracer.calls.stop()  # None: every target past the hit whose calls its checks read
        for target in self.targets if kind is None and calls is not None else ():
            if calls:
                tracer.calls.fed.setdefault(id(target), {})[self.line] = calls
            else:  # it made none: an earlier run's calls are replaced by nothing, and the hit resolves none
                tracer.calls.fed.get(id(target), {}).pop(self.line, None)
        return False


class PendingCall:
    """A feeding statement's module call, not yet copied: its module, kind and depth, its first arguments and results
    (tensors or not: the record keeps the tensors) and its parameters ([(name, parameter)]) by reference; ``stamps``:
    each tensor of them with what its version counter and memory were as it returned; whether gradients were on;
    ``written``: its record once a marked statement has copied it (the same call fed to several marked statements is
    copied once)."""

    __slots__ = ("module", "kind", "depth", "inputs", "outputs", "params", "grad", "stamps", "written")

    def __init__(self, module, kind, depth, inputs, outputs, params, grad, stamps):
        self.module, self.kind, self.depth, self.inputs, self.outputs = module, kind, depth, inputs, outputs
        self.params, self.grad, self.stamps, self.written = params, grad, stamps, None

    def unchanged(self):
        """Whether every tensor it holds still holds what it held as the call returned (an optimizer's step, an
        in-place change: not)."""
        for tensor, stamp in self.stamps:
            if (tensor._version, tensor.data_ptr()) != stamp:
                return False
        return True


def pending(module, kind, depth, args, outputs, params, torch):
    """A call kept by reference (``PendingCall``), or None where a tensor of it has no version counter (made under
    torch.inference_mode(): the caller copies it now). Its arguments and results are kept as the slices the record
    reads, each tensor stamped once: a feeding call is mostly never copied (most are no local's), so it is made with
    as few calls as it can be (no list per kind of tensor, no None put in for what is not one)."""
    tensor, inputs, results, stamps = torch.Tensor, args[:KEPT_INPUTS], outputs[:KEPT_OUTPUTS], []
    for held in (*inputs, *results):
        if isinstance(held, tensor):
            try:
                version = held._version
            except RuntimeError:  # an inference tensor: no version counter to check later
                return None
            stamps.append((held, (version, held.data_ptr())))
    for _, held in params:  # parameters: never None (module_calls.py ``_owned``)
        try:
            version = held._version
        except RuntimeError:
            return None
        stamps.append((held, (version, held.data_ptr())))
    return PendingCall(module, kind, depth, inputs, results, params, torch.is_grad_enabled(), stamps)


def resolve(fed, read, write, markers, traced_back):
    """The records of the fed calls (``fed``: feeding line -> its calls, PendingCalls or records already written) that
    the marked statement's hit carries: those with an output that a local tensor it read (``read``) holds as it is or
    rearranged (of a statement traced back to: the markers' ``traced``; the reader's rule, feeders.py ``as_read``, which
    still decides), written by ``write`` (module_calls.py ``CallRecorder._call``), each with the line of the statement
    that made it; ``traced_back``: ``_traced_back``'s answers, kept for the run."""
    torch = sys.modules["torch"]
    found, held = [], _Held(read, torch)
    for line, calls in fed.items():
        rearranged = _traced_back(markers, line, traced_back)
        for call in calls:
            if not isinstance(call, PendingCall):  # copied as it returned (no version counter to check)
                found.append({**call, "attrs": {**call["attrs"], protocol.FED_AT: line}})
                continue
            if call.written is None:
                if not (_attention_traced_back(call, rearranged) or held.any_of(call.outputs, rearranged)) \
                        or not call.unchanged():
                    continue
                try:  # it holds what it held as it returned: copied now
                    written = write(call.module, call.kind, call.depth, call.inputs, call.outputs, call.params,
                                    call.grad)
                except Exception:  # noqa: BLE001 - a call we cannot copy is left out, never the script's error
                    continue
                call.written = {**written, "attrs": {**written["attrs"], protocol.FED_AT: line}}
            found.append(call.written)
    return found


def _traced_back(markers, line, known):
    """Whether the statement at ``line`` was traced back to by a marker of ``markers`` (the markers' ``traced``);
    ``known``: the answers by (id(markers), line), kept for the run (the markers are the Tracer's lists, held)."""
    found = known.get((id(markers), line))
    if found is None:
        found = known[(id(markers), line)] = any(line in (marker.get("traced") or ()) for _, marker in markers)
    return found


def _attention_traced_back(call, traced):
    """An attention module called by a statement traced back to (``traced``): kept whatever became of its output, for
    what it was given (the reader's rule, feeders.py ``_attention_traced_back``)."""
    return traced and call.kind is protocol.ModuleKind.MULTIHEAD_ATTENTION and call.depth == 1


class _Held:
    """The local tensors a marked line read, asked whether one holds a call's output as it is or rearranged
    (feeders.py ``as_read`` and ``_rearranged``; a comparison that raises, tensors on two devices: held, the reader
    decides): the same tensor first, then equal values, then the same values sorted (each tensor's sorted once)."""

    def __init__(self, read, torch):
        self.read, self.torch, self.sorted, self.bounds = read, torch, {}, {}

    def any_of(self, outputs, rearranged):
        outputs = [output for output in outputs if isinstance(output, self.torch.Tensor)]
        for output in outputs:
            for tensor in self.read:
                if output is tensor:
                    return True
        equal = self.torch.equal
        try:
            for output in outputs:
                for tensor in self.read:
                    if output.shape == tensor.shape and equal(output, tensor):
                        return True
            for output in outputs if rearranged else ():
                for tensor in self.read:
                    if self._rearranged(output, tensor) or self._a_part(output, tensor):
                        return True
        except Exception:  # noqa: BLE001 - not comparable here: the reader compares the copies
            return True
        return False

    def _rearranged(self, output, tensor):
        if output.dtype != tensor.dtype or (count := output.numel()) < 2 or count != tensor.numel():
            return False  # (the dtype first: no call; each numel once)
        if self._same_memory(output, tensor):  # a view of the output (``keys.view(b, t, h, s)``): its values, in order
            try:  # sorted, they match: rearranged where they are not one value throughout (nor hold a NaN)
                low, high = self._bounds(output)
            except Exception:  # noqa: BLE001 - no bounds for this dtype (bool, complex): the sort decides
                pass
            else:
                return low < high
        if not self._may_hold_the_same_values(output, tensor):
            return False
        values = self._sorted(output)
        return bool(values[0] != values[-1]) and self.torch.equal(values, self._sorted(tensor))

    def _a_part(self, output, tensor):
        """Whether ``tensor`` is exactly one of the equal parts ``output`` splits into on its last axis (``q`` of
        ``q, k, v = qkv.chunk(3, dim=-1)``), or such a part rearranged (``q = q.view(B, N, h, hs)``, a transpose,
        between the chunk and the line: its values, sorted, one part's): the reader keeps it only where the source
        splits it so (chunked_feeders.py; feeders.py ``holds_a_part``, the same rule)."""
        if output.dtype != tensor.dtype or output.dim() == 0 or output.numel() == 0 or tensor.numel() == 0:
            return False
        whole = output.shape[-1]
        rows = output.numel() // whole
        if tensor.numel() % rows:
            return False
        width = tensor.numel() // rows
        if width == 0 or whole % width or whole == width:
            return False
        equal, axes = self.torch.equal, output.dim()
        if tensor.shape[:axes - 1] == output.shape[:-1] and tensor.dim() >= axes:
            flat = tensor.flatten(axes - 1)
            if flat.shape[-1] == width and any(equal(output[..., i:i + width], flat) for i in range(0, whole, width)):
                return True
        for i in range(0, whole, width):
            part = output[..., i:i + width].flatten().sort().values
            if bool(part[0] != part[-1]) and equal(part, self._sorted(tensor)):
                return True
        return False

    @staticmethod
    def _same_memory(output, tensor):
        """Whether two tensors of one dtype and size read the same memory in the same order (both row-major from the
        same address, on one device): no sort needed to compare their values (a view of the output is the commonest
        local a feeding call's output becomes); False where that cannot be read (the comparison decides)."""
        try:
            return (output.data_ptr() == tensor.data_ptr() and output.device == tensor.device
                    and output.is_contiguous() and tensor.is_contiguous() and output.is_neg() == tensor.is_neg())
        except Exception:  # noqa: BLE001 - no memory of its own to read (a sparse tensor)
            return False

    def _may_hold_the_same_values(self, output, tensor):
        """False only where the sorted values cannot match: the output's least and greatest values not apart (one
        value throughout, or a NaN), or not the tensor's. Two reductions cost a sort's fifth (~10 of ~50 µs, and a
        feeding call's output is mostly not a marked line's local); where the sort can still match, it decides."""
        try:
            low, high = self._bounds(output)
            if not low < high:
                return False
            return (low, high) == self._bounds(tensor)
        except Exception:  # noqa: BLE001 - no bounds for this dtype (bool, complex): the sort decides
            return True

    def _bounds(self, tensor):
        found = self.bounds.get(id(tensor))
        if found is None or found[0] is not tensor:
            low, high = self.torch.aminmax(tensor)
            found = self.bounds[id(tensor)] = (tensor, (low.item(), high.item()))
        return found[1]

    def _sorted(self, tensor):
        found = self.sorted.get(id(tensor))
        if found is None or found[0] is not tensor:
            found = self.sorted[id(tensor)] = (tensor, tensor.flatten().sort().values)
        return found[1]
