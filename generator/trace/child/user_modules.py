"""Which modules are the user's own (``users``: of a class defined under the script's folder), and which of those a
statement's checks can read, decided in the traced script's own interpreter as a call returns (module_calls.py's
recorder asks ``users``, then ``read``; loaded as a module of bootstrap.py's package: standard library
only, torch from sys.modules). Each test is what trace/reading/rebuilt.py needs to rebuild the call from its
parameters (a LayerNorm, a projection, an embedding), or a module with nothing of its own (a rearrange); the reading
side decides from the call's output whether it is one.
"""

import os
import sys

from .protocol import ModuleKind


def users(module, known, folder):
    """Whether ``module`` is of a class of the user's own (``known``: each class's answer, and each module's that
    defines one, kept for the run)."""
    cls = type(module)
    found = known.get(cls)
    if found is None:
        found = known.get(cls.__module__)
        if found is None:
            found = known[cls.__module__] = _in_folder(cls.__module__, folder)
        known[cls] = found
    return found


def _in_folder(name, folder):
    """Whether the module ``name`` is a file under ``folder`` (the script's: the user's own), not an installed one."""
    file = getattr(sys.modules.get(name), "__file__", None)
    path = os.path.abspath(file) if file else ""
    return path.startswith(folder) and "site-packages" not in path


def read(kind, wanted, module, args):
    """Whether a call of ``kind`` is one the statement's checks read: a kind they name, ("user_norm") a user's module
    that can be read as a LayerNorm, or ("user_leaf") one without parameters or modules of its own (a rearrange)."""
    return kind in wanted or kind is ModuleKind.USER and (
        ModuleKind.USER_NORM in wanted and _norm_like(module, args)
        or ModuleKind.USER_LEAF in wanted and not module._parameters and not module._modules
        or ModuleKind.USER_LINEAR in wanted and _linear_like(module, args)
        or ModuleKind.USER_EMBEDDING in wanted and _embedding_like(module, args))


def _embedding_like(module, args):
    """Whether a user's module may be an embedding (trace/reading/rebuilt.py's looks_like decides, from its output):
    no modules of its own, one parameter, a 2-D table, and a first input of integer ids."""
    if module._modules:  # a block of the user's (most of their modules): no list made, no torch looked up
        return False
    params = [p for p in module._parameters.values() if p is not None]
    torch = sys.modules["torch"]
    return (not module._modules and len(params) == 1 and params[0].dim() == 2 and bool(args)
            and isinstance(args[0], torch.Tensor) and not args[0].is_floating_point() and not args[0].is_complex())


def _norm_like(module, args):
    """Whether a user's module can be read as a LayerNorm (trace/reading/rebuilt.py's looks_like: what a user's call
    is read for): two 1-D parameters of one shape, the width of its first input's last axis (a DynamicTanh,
    ``gamma * tanh(alpha * x) + beta``, has a learned scalar besides them)."""
    if len(module._parameters) < 2:  # a block's own parameters are mostly none: no list made
        return False
    params = [p for p in module._parameters.values() if p is not None]
    if len(params) == 3 and sum(p.numel() == 1 for p in params) == 1:  # a DynamicTanh's alpha: read beside the two
        params = [p for p in params if p.numel() != 1]
    torch = sys.modules["torch"]
    return (len(params) == 2 and all(p.dim() == 1 for p in params) and params[0].shape == params[1].shape
            and bool(args) and isinstance(args[0], torch.Tensor) and args[0].shape[-1:] == params[0].shape)


def _linear_like(module, args):
    """Whether a user's module may be a projection (trace/reading/rebuilt.py's rebuild decides, from its output): no
    modules of its own, one 2-D parameter with an axis of its first input's width (or one of more axes, the first
    input's last axes and an output axis: a tensordot), and at most a 1-D one besides."""
    if module._modules:  # a block of the user's (most of their modules): no lists made, no torch looked up
        return False
    params = [p for p in module._parameters.values() if p is not None]
    torch = sys.modules["torch"]
    matrices = [p for p in params if p.dim() == 2]
    tensordots = [p for p in params if p.dim() > 2]  # a tensordot over its input's last axes (projections.py)
    if (len(tensordots) == 1 and not module._modules and len(params) <= 2 and bool(args)
            and isinstance(args[0], torch.Tensor) and all(p.dim() == 1 for p in params if p is not tensordots[0])):
        return tuple(args[0].shape[-(tensordots[0].dim() - 1):]) == tuple(tensordots[0].shape[:-1])
    return (not module._modules and len(matrices) == 1 and len(params) <= 2
            and all(p.dim() in (1, 2) for p in params) and bool(args) and isinstance(args[0], torch.Tensor)
            and args[0].dim() > 0 and args[0].shape[-1] in matrices[0].shape)
