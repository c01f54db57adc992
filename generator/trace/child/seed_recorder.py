"""Which torch.manual_seed(n) calls the traced script makes, recorded in its own interpreter: bootstrap.py loads this
file by its path before the script runs (standard library only; torch is wrapped as the script imports it)."""

import functools
import os
import sys
import time

from . import protocol


class SeedRecorder:
    """A finder that, once the script imports torch, records every torch.manual_seed(n) the script calls, and whether
    it calls torch.compile (code it compiles runs no marker: why a marker was not reached)."""

    def __init__(self, results, tracer):
        self.results = results
        self.tracer = tracer
        self.import_seconds = 0.0  # PyTorch's own import: start-up, not the script's run (the in-process trace had it)

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                load = spec.loader.exec_module

                def exec_module(module, load=load):
                    started = time.perf_counter()
                    load(module)
                    self.import_seconds = time.perf_counter() - started
                    self._wrap(module)
                    self.tracer.torch_imported(module)

                spec.loader.exec_module = exec_module
                return spec
        return None

    def _wrap(self, torch):
        seed = torch.random.manual_seed
        results, tracer = self.results, self.tracer

        def manual_seed(value):
            if os.getpid() == tracer.pid and results.lock.acquire(timeout=1):
                try:
                    results.event(protocol.seed_to_serializable(int(value)))
                finally:
                    results.lock.release()
            return seed(value)

        torch.manual_seed = torch.random.manual_seed = manual_seed
        compile_ = getattr(torch, "compile", None)
        if compile_ is None:
            return

        @functools.wraps(compile_)
        def compile(*args, **kwargs):  # noqa: A001 - torch.compile, recorded: its compiled code captures nothing
            if os.getpid() == tracer.pid and not tracer.compiled and results.lock.acquire(timeout=1):
                try:
                    tracer.compiled = True
                    results.event(protocol.compiled_to_serializable())
                finally:
                    results.lock.release()
            return compile_(*args, **kwargs)

        torch.compile = compile
