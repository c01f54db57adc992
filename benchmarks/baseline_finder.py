"""Copied into a baseline checkout's scratch interpreter (benchmarks/checkout.py) as ``_tt_baseline_finder``: imports
``transformer_trace`` and ``transformer_trace.models`` from that checkout's generator/ and models/, ahead of any
installed copy, as an editable install of it would. Standard library only: it runs at interpreter start-up."""

from __future__ import annotations

import importlib.util
import sys
from importlib.machinery import ModuleSpec


class BaselineFinder:
    """A meta path finder for the two top-level packages; their submodules are found through their ``__path__``."""

    def __init__(self, root: str) -> None:
        self.folders = {"transformer_trace": f"{root}/generator", "transformer_trace.models": f"{root}/models"}

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(fullname, f"{folder}/__init__.py",
                                                      submodule_search_locations=[folder])


def install(root: str) -> None:
    sys.meta_path.insert(0, BaselineFinder(root))
