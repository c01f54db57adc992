"""Which nn.Module runs a line shared by several uses (one attention function for the encoder's self-attention, the
decoder's masked self-attention and the cross-attention): read in the traced script's interpreter at each hit of such a
line only (bootstrap.py loads this file by its path, at the first such hit). Standard library only; torch is the
script's own, already imported."""

import re
import sys

_CALL_FRAMES = ("_call_impl", "_wrapped_call_impl")  # nn.Module.__call__'s frames: they hold the inputs as passed


def running_module(frame, names_cache):
    """For a hit of a line shared by several uses (one attention function for the encoder, the masked and the
    cross-attention): the nn.Modules whose methods are running, as the innermost one's place in the outermost one,
    from the outermost down: [[attribute, class name, inputs, projects, holds], ...]. ``inputs`` is what the module
    was called with: "one" (a single input of the query's shape), "same" (the key input is the query input, or equal
    to it), "differ" (it is not: cross-attention), "causal" or "projected" (three projections made before the call,
    with a causal mask or without: ``_inputs``), or null where the call's arguments are not known. ``projects``:
    whether it owns a projection (a matrix parameter of its own, or a child without children that has one: a Linear,
    GPT-2's Conv1D, a user's Linear-like class). ``holds``, of the innermost only: the sublayer it holds, "attention"
    or "mlp" (``_holds``). None when no module runs."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    running, calls = [], {}  # modules innermost first; id -> the arguments its __call__ got
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_call_impl" and frame.f_back is not None \
                and frame.f_back.f_code.co_name == "_wrapped_call_impl":
            frame = frame.f_back  # nn.Module.__call__'s inner frame: the outer one holds its module and arguments
            continue
        owner = frame.f_locals.get("self") if code.co_argcount and code.co_varnames[0] == "self" else None
        if owner is not None and isinstance(owner, torch.nn.Module):
            if not running or running[-1] is not owner:
                running.append(owner)
            if code.co_name in _CALL_FRAMES:
                calls[id(owner)] = (*frame.f_locals.get("args", ()), *frame.f_locals.get("kwargs", {}).values())
        frame = frame.f_back
    if not running:
        return None
    outer, inner = running[-1], running[0]
    cached = names_cache.get(id(outer))
    if cached is None or id(inner) not in cached[1]:  # a module added after the first look: named again
        cached = names_cache[id(outer)] = (outer, _named(outer), {})
    name = cached[1].get(id(inner), (None,))[0]
    chain = [outer] if name is None else [outer, *_along(outer, name)]
    if name is None and inner is not outer:  # not registered in the outermost (a plain list): the running ones
        chain = running[::-1]
    attributes = [""] + (name.split(".") if name else [""] * (len(chain) - 1))
    # what a module owns and holds, read once per naming of the outermost, as its names are (``_holds`` walks its
    # submodules: ~50 µs a hit)
    kept = cached[2]
    found = []
    for attribute, module in zip(attributes, chain):
        found.append([attribute, type(module).__name__, _inputs(calls.get(id(module)), torch),
                      _kept(kept, "projects", module, _projects),
                      _kept(kept, "holds", module, _holds) if module is inner else None])
    return found


def _kept(kept, what, module, read):
    """``read(module)``, once per module for as long as ``kept`` is kept."""
    found = kept.get((what, id(module)))
    if found is None or found[0] is not module:
        found = kept[(what, id(module))] = (module, read(module))
    return found[1]


_ATTENTION = re.compile(r"attn|attention|mha|multihead|msa", re.I)  # as shared_lines.py reads attention by name


def _holds(module):
    """The sublayer the module running the line holds (a residual wrapper's: ``ResidualAdd(fn)``, run only inside an
    nn.Sequential): "attention" where it holds an attention module (by attribute or class name) and no projection
    outside it, "mlp" where it holds projections and no attention, None where it holds both (a whole block) or
    neither. Read in one walk of its submodules (each once, by its first name, as ``named_modules`` finds them), what
    an attribute and a class's names say read once a run."""
    attention, projections, seen = [], [], {module}

    def visit(parent, prefix):
        for key, child in parent._modules.items():
            if child is not None and child not in seen:
                seen.add(child)
                name = prefix + key
                says = _SAYS_ATTENTION.get((key, type(child)))
                if says is None:
                    says = _SAYS_ATTENTION[(key, type(child))] = bool(
                        _ATTENTION.search(key.rsplit(".", 1)[-1]) or _ATTENTION.search(type(child).__name__))
                if says:
                    attention.append(name)
                if not child._modules and _matrix(child):
                    projections.append(name)
                visit(child, name + ".")
    visit(module, "")
    outside = [p for p in projections if not any(p == a or p.startswith(a + ".") for a in attention)]
    if attention and not outside:
        return "attention"
    return "mlp" if outside and not attention else None


_SAYS_ATTENTION: dict[tuple[str, type], bool] = {}  # (an attribute, a class) -> either name says attention


def _matrix(module):
    """Whether ``module`` has a matrix parameter of its own."""
    for param in module._parameters.values():
        if param is not None and param.dim() == 2:
            return True
    return False


def _named(outer):
    """{id(a module): (its name, it)}, as ``outer.named_modules()`` names them, in its order ("" for ``outer``; depth
    first, each module once, by the first name found), made by one recursive function: its generators cost ~8 Python
    calls a module (one per level each name is yielded through), this ~4 (a 100-module model's names: ~850 calls)."""
    named, seen = {id(outer): ("", outer)}, {outer}  # (a set of the modules, as named_modules' own: their __hash__)

    def visit(module, prefix):
        for name, child in module._modules.items():
            if child is not None and child not in seen:
                seen.add(child)
                named[id(child)] = (prefix + name, child)
                visit(child, prefix + name + ".")
    visit(outer, "")
    return named


def _projects(module):
    """Whether ``module`` owns a projection: a matrix parameter of its own (nn.MultiheadAttention's in_proj_weight), or
    a child with no children of its own that has one (a Linear, a Conv1D): the attention module, not a block around
    it."""
    if _matrix(module):
        return True
    for child in module._modules.values():
        if child is not None and not child._modules and _matrix(child):
            return True
    return False


def _along(outer, name):
    """The modules on the way from ``outer`` to its submodule ``name`` ("decoder.layers.0.src_attn"), that one last."""
    module, found = outer, []
    for part in name.split("."):
        module = module._modules[part]
        found.append(module)
    return found


def _inputs(arguments, torch):
    """"one", "same", "differ", "causal" or "projected": whether a module was called with a key input other than its
    query input (the first argument); the key is the next floating tensor of the query's rank and feature size (a mask
    is not). Keys of another length than the queries are another sequence: "differ". Queries, keys and values that are
    three different tensors of one length are projections made before the call (``mha(W_q(x), W_k(x), W_v(x), mask)``):
    they do not say self or cross, so a causal mask among the arguments says self-attention ("causal") and none says
    nothing ("projected")."""
    if not arguments or not isinstance(arguments[0], torch.Tensor):
        return None
    query = arguments[0]
    inputs = [other for other in arguments[1:] if isinstance(other, torch.Tensor) and other.is_floating_point()
              and other.dim() == query.dim() and other.shape[-1:] == query.shape[-1:]]
    if not inputs:
        return "one"
    key = inputs[0]
    if key is query or (key.shape == query.shape and bool(torch.equal(key, query))):
        return "same"
    if query.dim() >= 2 and key.shape[-2] != query.shape[-2]:
        return "differ"
    value = inputs[1] if len(inputs) > 1 else None
    if value is None or value is key or (value.shape == key.shape and bool(torch.equal(value, key))):
        return "differ"
    masks = [m for m in arguments[1:] if isinstance(m, torch.Tensor) and all(m is not x for x in inputs)
             and m.dim() >= 2 and m.shape[-1] == m.shape[-2] == query.shape[-2] > 1]
    return "causal" if any(_causal(m, torch) for m in masks) else "projected"


def _causal(mask, torch):
    """Whether ``mask`` (…, T, T) blocks every key after its query and lets the first query see itself, in every item
    (boolean or 0/1 either way round, or additive with a large negative value blocking): padding may block more."""
    rows = mask.reshape(-1, mask.shape[-2], mask.shape[-1])
    binary = mask.dtype == torch.bool or bool(((rows == 0) | (rows == 1)).all())
    allowed = rows != 0 if binary else rows > -1e4
    later = torch.ones(mask.shape[-1], mask.shape[-1], dtype=torch.bool, device=mask.device).triu(1)
    return any(not bool((sees & later).any()) and bool(sees[:, 0, 0].all())
               for sees in ((allowed, ~allowed) if binary else (allowed,)))


class SharedLines:
    """What tells the hits of a line shared by several uses apart: the user's line that called it and the nn.Module
    running it (its names cached per outermost module)."""

    def __init__(self, user_files):
        self.user_files = user_files
        # id of an outermost running nn.Module -> (it, {id of a submodule: (its name, it)}, {(what, id of a module it
        # runs): (that module, whether it owns a projection or the sublayer it holds)}) (running_module)
        self.names = {}
        # id of the frame of the latest hit and what tells it apart; forgotten as code holding a shared line is
        # entered, so that a new frame at a freed one's address is read anew (the frame is not held: nor its tensors)
        self.frame, self.found = None, None

    def site_and_module(self, frame):
        """``call_site`` and ``module``, the same for every hit of one run of a frame, read once."""
        if id(frame) != self.frame:
            self.frame, self.found = id(frame), (self.call_site(frame), self.module(frame))
        return self.found

    def use(self, frame):
        """What tells this frame's use of a shared line from another's, as the reader tells them (shared_lines.py:
        from the calling line and the running modules' attributes, classes, inputs and what they own and hold), the
        layers' numbers left out: the encoder's second layer is the same use as its first."""
        site, module = self.site_and_module(frame)
        return (tuple(site) if site else None,
                tuple(("#" if attribute.isdigit() else attribute, name, inputs, projects, holds)
                      for attribute, name, inputs, projects, holds in module) if module else None)

    def forget(self):
        """Code holding a shared line is entered: a new frame (Tracer.entered_shared)."""
        self.frame = None

    def call_site(self, frame):
        """The line of the user's files that called this frame (through library frames such as nn.Module.__call__)."""
        caller = frame.f_back
        while caller is not None and caller.f_code.co_filename not in self.user_files:
            caller = caller.f_back
        return [caller.f_code.co_filename, caller.f_lineno] if caller is not None else None

    def module(self, frame):
        try:
            return running_module(frame, self.names)
        except Exception:  # noqa: BLE001 - a module we cannot read is a hit not told apart, never the script's error
            return None
