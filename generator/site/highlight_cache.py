"""Highlighted code blocks kept for the next page that shows the same code with the same options.

The reports quote the model's source lines on every snapshot page, and a regeneration in `python -m transformer_trace
serve` quotes the very same lines again: Pygments' highlighting is about a third of their Markdown conversion.
:func:`install` wraps pymdownx.highlight's ``Highlight.highlight`` so that a code block whose every input (the code,
the language, every argument, the highlighter's whole configuration) was highlighted before is given the HTML it gave
then. Only what is a pure function of those inputs is kept: block code (not inline code, whose result is a mutable
element), with a title only in the highlighter's text mode (an HTML title goes into the page's own stash). The
block's number on its page (``code_block_count``) is not part of the key: it only numbers the ids of the block's
lines (``__span-3-7``), so the HTML is kept with a number no page reaches (SENTINEL) in those ids and given back with
the block's own; a print view, which quotes every snapshot's code again at other numbers, finds it too. A helper
process (generator/site/parallel.py) sends back what it highlighted. The blocks are kept between processes too, as
the compiled templates are (generator/template_cache.py): :func:`load` reads them from the project's cache (a file
named after the Pygments and pymdownx versions, which shape the HTML) when MkDocs starts, :func:`save` writes them after
a build, so a new `mkdocs build` highlights only code it has not highlighted before. ``TT_PAGE_HELPER=0`` turns this
off too: MkDocs alone.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_BLOCKS = 4096  # the least recently used go first
SENTINEL = 7_093_512_463  # the block number the kept HTML is highlighted with (no page has that many blocks)
_cache: OrderedDict[str, str] = OrderedDict()
_added: list[tuple[str, str]] | None = None  # in a helper process: highlighted since the last taken()
_stored: Path | None = None  # the file load() read and save() writes
_unsaved = False  # blocks were kept since load() or save()


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
        titled = given.get("title") not in (None, "")
        if (given.get("inline") or getattr(self, "auto_title", True)
                or titled and getattr(self, "title_mode", "html") != "text"):
            return original(self, *args, **kwargs)
        number = given.pop("code_block_count", None)
        options = sorted(((name, value) for name, value in vars(self).items() if name != "md"),
                         key=lambda item: item[0])
        inputs = repr((type(self).__qualname__, sorted(given.items()), options))
        if str(SENTINEL) in inputs:  # the code itself holds the number: it could not be told from an id
            return original(self, *args, **kwargs)
        key = hashlib.blake2b(inputs.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()
        html = _cache.get(key)
        if html is not None:
            _cache.move_to_end(key)
            return _numbered(html, self, number)
        if number is None:  # a pymdownx without block numbers: the HTML as it is
            html = original(self, **given)
        else:
            html = original(self, **given, code_block_count=SENTINEL)
            if not isinstance(html, str) or not _numbers_only_ids(html, self):
                return original(self, *args, **kwargs)
        if isinstance(html, str):
            _keep(key, html)
            if _added is not None:
                _added.append((key, html))
            return _numbered(html, self, number)
        return html

    highlight.Highlight.highlight = _installed = cached


def _id_prefixes(highlighter) -> set[str]:
    """The prefixes of the ids pymdownx numbers with the block's number (``{prefix}-{number}-{line}``)."""
    return {prefix for prefix in (getattr(highlighter, "line_spans", ""), getattr(highlighter, "line_anchors", ""))
            if prefix}


def _numbers_only_ids(html: str, highlighter) -> bool:
    """Whether SENTINEL shows in ``html`` only as the block number of its line ids (not in the code, say)."""
    return html.count(str(SENTINEL)) == sum(html.count(f"{prefix}-{SENTINEL}-") for prefix in _id_prefixes(highlighter))


def _numbered(html: str, highlighter, number: int | None) -> str:
    """The kept HTML with the block's own number in its line ids."""
    if number is None:
        return html
    for prefix in _id_prefixes(highlighter):
        html = html.replace(f"{prefix}-{SENTINEL}-", f"{prefix}-{number}-")
    return html


def _keep(key: str, html: str) -> None:
    global _unsaved
    _unsaved = True
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


def store_path() -> Path:
    """The file the blocks are kept in between processes, named after what shapes their HTML besides the key."""
    from importlib.metadata import version

    from transformer_trace.template_cache import cache_root

    shaped_by = f"{version('pygments')}\0{version('pymdown-extensions')}\0{SENTINEL}"
    return cache_root() / "highlighted" / f"{hashlib.sha256(shaped_by.encode()).hexdigest()[:16]}.json"


def load() -> None:
    """Take in the blocks a past process kept (older than any this one highlighted); nothing when there is no file or it
    cannot be read."""
    global _stored, _unsaved
    if not active():
        return
    try:
        _stored = store_path()
        blocks = json.loads(_stored.read_text(encoding="utf-8"))
    except (ImportError, OSError, ValueError):  # PackageNotFoundError is an ImportError
        return
    if not isinstance(blocks, list):
        return
    mine = list(_cache.items())
    _cache.clear()
    for block in blocks:
        if isinstance(block, list) and len(block) == 2 and all(isinstance(part, str) for part in block):
            _cache[block[0]] = block[1]
    for key, html in mine:
        _cache[key] = html
        _cache.move_to_end(key)
    while len(_cache) > MAX_BLOCKS:
        _cache.popitem(last=False)
    _unsaved = bool(mine)


def save() -> None:
    """Write the blocks kept for the next process, if any were added since load() (whole or not at all)."""
    global _unsaved
    if _stored is None or not _unsaved or not active():
        return
    try:
        _stored.parent.mkdir(parents=True, exist_ok=True)
        partial = _stored.with_name(f"{_stored.name}.{os.getpid()}")
        partial.write_text(json.dumps([[key, html] for key, html in _cache.items()]), encoding="utf-8")
        os.replace(partial, _stored)
        _unsaved = False
    except OSError:
        pass
