"""The `nn.Module` calls a marked line makes, recorded in the traced script's own interpreter (bootstrap.py loads this
file by path: standard library only, torch taken from sys.modules once the script has imported it).

While a marked statement runs, one global forward pre-hook and one forward hook
(torch.nn.modules.module.register_module_forward_*_hook) are installed; they are removed as the statement's capture is
taken, so code outside marked lines runs without hooks. The calls the statement makes down to depth 3 (its own
modules, and what they call) of the kinds a check can recompute (Linear, LayerNorm, Embedding, Conv2d,
MultiheadAttention: PyTorch's own classes) or of the user's own classes (defined under the script's folder) are kept
with their tensor inputs, their outputs, their parameters (each tensor written once, in a ``{"param": n, "value":
...}`` event, and named by its number afterwards) and the attributes a recomputation needs (eps, stride, heads...).
The hit event carries them as ``"calls"``: ``[{"module": class name, "kind", "depth", "inputs": [value], "outputs":
[value], "params": {name: n}, "attrs": {...}}]``, and the module tensors the statement reads by attribute
(``self.pos_embedding``) as ``"reads"``: ``{name: n}`` (generator/trace/capture.py reads both).
"""

import os
import sys

KINDS = {"Linear": "linear", "NonDynamicallyQuantizableLinear": "linear", "LayerNorm": "layer_norm",
         "Embedding": "embedding", "Conv2d": "conv2d", "MultiheadAttention": "multihead_attention"}
ATTRIBUTES = ("eps", "epsilon", "variance_epsilon", "normalized_shape", "stride", "padding", "dilation", "groups",
              "num_heads", "batch_first", "head_dim", "padding_idx")
DEPTH = 3  # the statement's own module calls, and the ones those make (a Sequential's layers)
MOST_CALLS = 24  # per statement: a marked line that runs a whole model keeps its first calls only


class CallRecorder:
    """The module calls of the marked statements that are running (nested: a marked line can call marked code)."""

    def __init__(self, results, folder, tensor_value):
        self.results = results
        self.folder = os.path.join(os.path.abspath(folder), "")  # the script's folder: the user's own classes
        self.tensor_value = tensor_value  # bootstrap.tensor_value: a copy within the capture budget
        self.running = []  # per running statement: [depth now, calls]
        self.handles = ()
        self.params = {}  # id(parameter) -> (parameter kept alive, its number)
        self.user_classes = {}  # class -> defined in the user's files

    def start(self, frame, markers):
        """A marked statement begins: the local tensors it reads are copied (as they are before it rebinds them), its
        calls recorded until ``stop``."""
        self.running.append([0, []])
        torch = sys.modules.get("torch")
        if torch is None or not hasattr(torch, "nn"):
            return
        names = markers[0][1]["locals"]
        if names:
            self.running[-1][1].extend(self._locals(frame, names, torch))
        if self.handles:
            return
        hooks = torch.nn.modules.module
        self.handles = (hooks.register_module_forward_pre_hook(self._enter),
                        hooks.register_module_forward_hook(self._leave))

    def stop(self):
        """The statement's capture is taken: its calls (the hooks removed once no marked statement runs)."""
        calls = self.running.pop()[1] if self.running else []
        if not self.running:
            for handle in self.handles:
                handle.remove()
            self.handles = ()
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
                owner, value = read(frame, name.rsplit(".", 1)[0]), read(frame, name)
            except Exception:  # noqa: BLE001 - a property that raises: not a weight
                continue
            if (isinstance(owner, torch.nn.Module) and isinstance(value, torch.Tensor)
                    and value.is_floating_point()):
                with self.results.lock:
                    number = self._param(value, torch)
                if number is not None:
                    found[name] = number
        return found

    def _locals(self, frame, names, torch):
        """The local tensors (or a tuple of up to three) the statement reads, as calls of kind "local"."""
        found = []
        for name in names:
            value = frame.f_locals.get(name)
            tensors = value if isinstance(value, (tuple, list)) and 0 < len(value) <= 3 else (value,)
            if not all(isinstance(t, torch.Tensor) and t.is_floating_point() for t in tensors):
                continue
            with self.results.lock:
                outputs = [self._value(f"{name}{i}", t, torch) for i, t in enumerate(tensors)]
            found.append({"module": name, "kind": "local", "depth": 0, "inputs": [], "outputs": outputs,
                          "params": {}, "attrs": {}})
        return found

    def _enter(self, module, args):
        for frame in self.running:
            frame[0] += 1

    def _leave(self, module, args, output):
        cls = type(module)  # torch.nn's own classes by name (a user's class of the same name is the user's; a
        # quantised or fake-quantised Linear of torch.ao is not nn.Linear's formula), a convolution with zero padding
        kind = KINDS.get(cls.__name__) if cls.__module__.startswith("torch.nn.modules.") else None
        if kind == "conv2d" and getattr(module, "padding_mode", "zeros") != "zeros":
            kind = None
        for frame in self.running:
            depth = frame[0]
            frame[0] = max(depth - 1, 0)
            if depth <= DEPTH and len(frame[1]) < MOST_CALLS and (kind or self._user(module)):
                try:
                    frame[1].append(self._call(module, kind or "user", depth, args, output))
                except Exception:  # noqa: BLE001 - a call we cannot copy is left out, never the script's error
                    continue

    def _user(self, module):
        cls = type(module)
        if cls not in self.user_classes:
            file = getattr(sys.modules.get(cls.__module__), "__file__", None)
            path = os.path.abspath(file) if file else ""
            self.user_classes[cls] = path.startswith(self.folder) and "site-packages" not in path
        return self.user_classes[cls]

    def _call(self, module, kind, depth, args, output):
        torch = sys.modules["torch"]
        with self.results.lock:
            inputs = [self._value(f"input{i}", a, torch) for i, a in enumerate(args[:3])]
            outputs = output if isinstance(output, (tuple, list)) else (output,)
            outputs = [self._value(f"output{i}", o, torch) for i, o in enumerate(outputs[:2])]
            params = {name: self._param(p, torch) for name, p in module.named_parameters(recurse=kind != "user")}
        attrs = {name: _plain(getattr(module, name)) for name in ATTRIBUTES if hasattr(module, name)}
        return {"module": type(module).__name__, "kind": kind, "depth": depth, "inputs": inputs, "outputs": outputs,
                "params": {k: v for k, v in params.items() if v is not None},
                "attrs": {k: v for k, v in attrs.items() if v is not None}}

    def _value(self, name, value, torch):
        if not isinstance(value, torch.Tensor):
            return None
        return self.tensor_value(self.results, name, value, torch)

    def _param(self, param, torch):
        """The parameter's number; its values written once, in an event of their own (the lock held)."""
        key = (id(param), getattr(param, "_version", 0))  # an optimizer's step changes it in place: a new copy
        known = self.params.get(key)
        if known is not None:
            return known[1]
        value = self.tensor_value(self.results, "param", param, torch)
        if "array" not in value:
            return None  # past the capture budget
        number = len(self.params)
        self.params[key] = (param, number)
        self.results.event({"param": number, "value": value})
        return number


def _plain(value):
    """An attribute as JSON (numbers, booleans, tuples of them), or None."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, float)) for v in value):
        return list(value)
    return None
