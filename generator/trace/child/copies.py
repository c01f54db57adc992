"""The copies of the values a marked line held, made in the traced script's own interpreter (bootstrap.py loads this
file by its path: standard library only, torch and NumPy taken from sys.modules once the script has imported them).

A value becomes JSON as protocol.py's value_to_serializable writes it; a tensor's bytes are a CPU copy kept in the
Results until its flushing thread writes them. The common case (a CPU tensor of real numbers, within the budget) takes a
short path, and the same memory read again while one marked statement runs (a module call's output that is the line's
value, or a view of it; the next call's input) is copied once: the values name the one copy, as long as the tensor they
view is the same object (a weak reference: nothing is kept alive), their data are the same bytes read in the same order
and sign, and the version counter is unchanged (an in-place change makes a new copy). A value that views the copy in
another shape says so ("view"). Once a marked statement has been taken the copies are forgotten, while an outer marked
statement runs too (hits.forget_copies): a change through ``.data`` or NumPy moves no version counter, so a
later line's read of the same memory is copied anew.
"""

import ctypes  # at the start, as results.py: the standard library's (bootstrap._unshadow)
import sys
import weakref

from . import protocol
from .protocol import ValueKind

MOST_HELD = 64  # copies remembered while a statement runs (their tensors not held: weak references)
# bytes: a row-major CPU tensor up to this size is copied into a bytes object of its own (tensor_value). A clone of a
# small tensor costs an allocation and PyTorch's dispatch (more than all else its capture does); this one malloc and a
# memcpy, of exactly its bytes. (Blocks shared by small copies cost more on the corpus: a bytearray is zeroed as it is
# made, and one of 128 KiB or more is mmapped afresh and faulted in page by page every run, ~0.5 ms a tiny model's
# run; a fixed 64 KiB one is zeroed whole all the same.)
SMALL_COPY = 1 << 16
# torch dtype -> its name, for the dtypes a page shows as they are (not complex, not quantized)
_PLAIN_DTYPES: "dict[object, str]" = {}


def _plain_dtype(value):
    """The name of a tensor's dtype where a page shows its values as they are (remembered); None for the others."""
    if value.is_complex() or value.is_quantized:
        return None
    _PLAIN_DTYPES[value.dtype] = name = str(value.dtype)
    return name


_value = protocol.value_to_serializable
_new_copy, _shared_copy = protocol.tensor_copy_to_serializable, protocol.shared_copy_to_serializable
_string_at = getattr(ctypes, "_string_at", ctypes.string_at)  # string_at's own call, without its Python frame


def tensor_value(results, name, value, torch):
    """A tensor's value: its bytes as a CPU copy, or why there is none (as trace/reading/capture.py describes).
    The common case runs in this frame and one of protocol.py's: each of its tensor's attributes read once."""
    if value.is_cpu and value.layout is torch.strided:
        try:
            dtype = _PLAIN_DTYPES[value.dtype]
        except KeyError:
            dtype = _plain_dtype(value)
        size = value.nbytes
        if dtype is not None and size > 0:
            # the memory it reads: of the tensor it views where it reads it in row-major order (then any such view
            # of the same bytes shares the copy), else the tensor's own (itself only)
            ordered, negative, pointer, shape = value.is_contiguous(), value.is_neg(), value.data_ptr(), value.shape
            base = value._base
            owner = base if ordered and base is not None else value
            try:
                key = (id(owner), value._version, pointer, size, dtype, ordered, negative)
            except RuntimeError:  # one made under torch.inference_mode() has no version counter: never recognised
                key = None
            known = results.copied.get(key)
            if known is not None and known[0]() is owner:
                described = known[1]
                return _shared_copy(name, described, None if described["shape"] == list(shape) else list(shape))
            if size <= results.budget_left:
                # its memory holds its values in order: a small one's bytes copied (SMALL_COPY), else cloned
                if ordered and not negative and size <= SMALL_COPY:
                    copy = _string_at(pointer, size)
                else:
                    copy = value.detach().clone() if value.requires_grad else value.clone()
                    if type(copy) is not torch.Tensor:  # a Parameter or another subclass: its values
                        copy = copy.as_subclass(torch.Tensor)
                results.budget_left -= size
                found = _new_copy(name, dtype, shape, size)
                results.pending_arrays.append((found["array"], copy))  # Results.array's, a frame less
                if key is not None:
                    if len(results.copied) >= MOST_HELD:
                        results.copied.clear()
                    results.copied[key] = (weakref.ref(owner), found["array"])
                return found
    return _other_tensor(results, name, value, torch)


class Live:
    """A parameter kept by reference, not copied (module_calls.py: a Linear's or LayerNorm's weights in a forward pass
    without gradients): Results writes its values when it flushes, or copies them before an optimizer's step changes
    them; written as changed where its version counter or its storage moved before that (``current``)."""

    __slots__ = ("tensor", "version", "pointer", "shape", "frozen", "written")

    def __init__(self, tensor):
        self.tensor, self.version, self.pointer, self.shape = tensor, tensor._version, tensor.data_ptr(), tensor.shape
        self.frozen, self.written = None, False

    def current(self):
        """The values it had when it was kept: its copy (``freeze``), or the tensor where it still holds them
        (``.data =`` a smaller tensor keeps the version and the pointer); else None."""
        if self.frozen is not None:
            return self.frozen
        tensor = self.tensor
        if tensor._version == self.version and tensor.data_ptr() == self.pointer and tensor.shape == self.shape:
            return tensor
        return None

    def freeze(self):
        """Copied now (an optimizer's step is about to change it), where it still holds its values."""
        if self.frozen is None and not self.written and (tensor := self.current()) is not None:
            self.frozen = tensor.detach().clone()


def live_value(results, name, value, torch):
    """A CPU parameter of real numbers within the budget, kept by reference (``Live``: copied before an optimizer's
    step); None for any other."""
    if not value.is_cpu or value.layout is not torch.strided:
        return None
    try:
        dtype = _PLAIN_DTYPES[value.dtype]
    except KeyError:
        dtype = _plain_dtype(value)
    size = value.nbytes
    if dtype is None or not 0 < size <= results.budget_left:
        return None
    results.budget_left -= size
    live = Live(value)
    results.keep_live_through_steps(live)
    found = _new_copy(name, dtype, value.shape, size, live=True)
    results.pending_arrays.append((found["array"], live))  # Results.array's, a frame less
    return found


def _other_tensor(results, name, value, torch):
    """A meta, complex, quantized, empty, sparse or non-CPU tensor, or one past the budget."""
    device = value.device.type
    size = value.numel() * value.element_size()
    described = f"{tuple(value.shape)} {str(value.dtype).replace('torch.', '', 1)}"
    if value.is_meta:  # torch.set_default_device("meta"): a shape without values
        return _value(name, ValueKind.OTHER, device, f"a meta tensor {described}, which holds no values to show")
    if value.is_complex() or value.is_quantized or value.numel() == 0:
        kind = "complex" if value.is_complex() else "quantized" if value.is_quantized else "empty"
        return _value(name, ValueKind.OTHER, device, f"a {kind} tensor {described}, which a page cannot show")
    if value.layout != torch.strided:  # sparse: its values, as the dense tensor they stand for
        if size > results.budget_left:
            return _value(name, ValueKind.OTHER, device,
                          f"a sparse tensor {described}, not copied: too big to make dense")
        dense = tensor_value(results, name, value.detach().to_dense(), torch)
        dense["note"] = "a sparse tensor, shown dense"
        return dense
    if size > results.budget_left:
        return _value(name, ValueKind.TENSOR, device, f"{described}, {results.not_copied(size)}")
    return _value(name, ValueKind.TENSOR, device, "", array=_array(results, value, torch))


def _array(results, tensor, torch):
    copy = tensor.detach().clone() if tensor.device.type == "cpu" else tensor.detach().to("cpu", copy=True)
    if type(copy) is not torch.Tensor:  # a Parameter or another subclass: its values
        copy = copy.as_subclass(torch.Tensor)
    nbytes = copy.numel() * copy.element_size()
    results.budget_left -= nbytes
    return results.array(copy, str(copy.dtype), copy.shape, nbytes)


class Unreadable:
    """A marked name whose reading raised (a property of the script's that fails): said on its page instead."""

    def __init__(self, error):
        self.error = type(error).__name__


def captured(results, read):
    """The values of ``read`` ([(name, its value)]) as JSON (``to_value``; what one is where it cannot be copied), the
    lock held; a slice's ("bias[:, :, :T, :T]") filed under its variable's name (data file names), said in its note."""
    torch = sys.modules.get("torch")
    values = []
    for name, value in read:
        if type(value) is Unreadable:
            found = _value(name, ValueKind.OTHER, "cpu", f"reading it raised {value.error}")
        else:
            try:  # the common case, a tensor (a plain one told by its type, without a call): to_value's first
                found = (tensor_value(results, name, value, torch) if torch is not None and (
                    type(value) is torch.Tensor or isinstance(value, torch.Tensor)) else to_value(results, name, value))
            except Exception as exc:  # noqa: BLE001 - a value we cannot copy must not look like the script's own error
                note = f"a {type(value).__name__} that could not be copied ({type(exc).__name__})"
                found = _value(name, ValueKind.OTHER, "cpu", note)
        if "[" in name:
            found["name"], found["note"] = name.split("[", 1)[0], found["note"] or f"the slice {name}"
        values.append(found)
    return values


def to_value(results, name, value):
    """One variable at one hit, as JSON (the lock held)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return tensor_value(results, name, value, torch)
    if isinstance(value, (bool, int, float)):
        return _value(name, ValueKind.SCALAR, "cpu", type(value).__name__, data=value)
    if isinstance(value, (list, tuple)) and value and _all_ints(value):
        return _value(name, ValueKind.INTS, "cpu", f"a {type(value).__name__} of ints", data=value)
    if torch is not None and isinstance(value, dict) and value and _all_tensors(value, torch):
        # a model's output dict may hold None beside its tensors (DINOv2's "masks": None): its tensors are the value
        tensors = {key: v for key, v in value.items() if v is not None}
        size = sum(v.numel() * v.element_size() for v in tensors.values())
        if size > results.budget_left:
            return _value(name, ValueKind.DICT, "cpu", f"a dict of {len(tensors)} tensors, {results.not_copied(size)}")
        entries = [{"key": str(key), "array": _array(results, tensor, torch)} for key, tensor in tensors.items()]
        device = next(iter(tensors.values())).device.type
        empty = len(value) - len(tensors)
        note = "a dict of tensors" + (f" ({empty} None entr{'y' if empty == 1 else 'ies'} left out)" if empty else "")
        return _value(name, ValueKind.DICT, device, note, entries=entries)
    if torch is not None and isinstance(value, (list, tuple)) and sum(isinstance(v, torch.Tensor) for v in value) == 1:
        # `return self.dense(X), state`: one tensor returned with what goes along with it (a state, a cache, None):
        # that tensor is the step's value (two or more tensors are not chosen between)
        index, tensor = next((i, v) for i, v in enumerate(value) if isinstance(v, torch.Tensor))
        found = to_value(results, name, tensor)
        rest = ", ".join(type(v).__name__ for i, v in enumerate(value) if i != index)
        found["note"] = "; ".join(filter(None, (f"item {index} of a {type(value).__name__} of {len(value)}, its one "
                                                f"tensor (beside: {rest})", found.get("note"))))
        return found
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray) and value.dtype.kind in "biuf" and value.size:
        if value.nbytes <= results.budget_left:
            results.budget_left -= value.nbytes
            array = results.array(value.copy(), f"numpy:{value.dtype.str}", value.shape, value.nbytes)
            return _value(name, ValueKind.TENSOR, "cpu", "a NumPy array", array=array)
        described = f"a NumPy array {value.shape} {value.dtype}"
        return _value(name, ValueKind.OTHER, "cpu", f"{described}, {results.not_copied(value.nbytes)}")
    return _value(name, ValueKind.OTHER, "cpu", f"a {type(value).__name__}, which a page cannot show")


def _all_tensors(value, torch):
    """Tensors (at least one), or None where a tensor is optional."""
    return (all(v is None or isinstance(v, torch.Tensor) for v in value.values())
            and any(v is not None for v in value.values()))


def _all_ints(value):
    if isinstance(value, (list, tuple)):
        return all(_all_ints(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)


