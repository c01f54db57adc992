"""Highlighted code blocks kept for the next page that shows the same code with the same options.

The reports quote the model's source lines on every snapshot page, and a regeneration in `python -m transformer_trace
serve` quotes the very same lines again: Pygments' highlighting is about a third of their Markdown conversion.
:func:`install` wraps pymdownx.highlight's ``Highlight.highlight`` so that a code block whose every input (the code,
the language, every argument, the highlighter's whole configuration) was highlighted before is given the HTML it gave
then. Only what is a pure function of those inputs is kept: block code (not inline code, whose result is a mutable
element) without a title (an HTML title goes into the page's own stash). A helper process (generator/site/parallel.py)
sends back what it highlighted. ``TT_PAGE_HELPER=0`` turns this off too: MkDocs alone.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

MAX_BLOCKS = 4096  # the least recently used go first
_cache: OrderedDict[str, str] = OrderedDict()
_added: list[tuple[str, str]] | None = None  # in a helper process: highlighted since the last taken()


_installed: Callable[..., Any] | None = None  # the wrapper install() set, so that it wraps only once


def active() -> bool:
    return os.environ.get("TT_PAGE_HELPER", "1") != "0"


def install() -> None:
    """Wrap ``Highlight.highlight`` once per process (nothing when pymdownx is missing)."""
    try:
        from pymdownx import highlight
    except ImportError:
        return
    global _installed
    original = highlight.Highlight.highlight
    if original is _installed:
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def cached(self, *args, **kwargs):
        if not active():
            return original(self, *args, **kwargs)
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:
            return original(self, *args, **kwargs)
        bound.apply_defaults()
        given = {name: value for name, value in bound.arguments.items() if name != "self"}
        if given.get("inline") or given.get("title") not in (None, "") or getattr(self, "auto_title", True):
            return original(self, *args, **kwargs)
        options = sorted(((name, value) for name, value in vars(self).items() if name != "md"),
                         key=lambda item: item[0])
        key = hashlib.blake2b(repr((type(self).__qualname__, sorted(given.items()), options)).encode("utf-8",
                                                                                                     "surrogatepass"),
                              digest_size=20).hexdigest()
        html = _cache.get(key)
        if html is not None:
            _cache.move_to_end(key)
            return html
        html = original(self, *args, **kwargs)
        if isinstance(html, str):
            _keep(key, html)
            if _added is not None:
                _added.append((key, html))
        return html

    highlight.Highlight.highlight = _installed = cached


def _keep(key: str, html: str) -> None:
    _cache[key] = html
    while len(_cache) > MAX_BLOCKS:
        _cache.popitem(last=False)


def start_recording() -> None:
    """In a helper process: keep what is highlighted from now on, for taken()."""
    global _added
    _added = []


def taken() -> list[tuple[str, str]]:
    """What was highlighted since the last call, in a helper process (which sends it to its parent); else nothing."""
    out = list(_added or ())
    if _added is not None:
        _added.clear()
    return out


def merge(blocks: list[tuple[str, str]] | Any) -> None:
    for key, html in blocks or ():
        _keep(key, html)
