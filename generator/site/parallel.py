"""A second process for MkDocs' page work: Markdown conversion and search indexing on the other core.

MkDocs builds page after page on one core, and most of a page's time is its Markdown (highlighted code above all)
and its search entries (Material parses the page's HTML again). :class:`Helper` forks the process as it is (the
configuration, plugins, theme and pages loaded) into a child that does a share of that work and hands each result
back; the parent takes a result only when the input it would have worked from is byte-identical to the child's
(a digest of the page's Markdown for its HTML, of its final HTML, title, URL and metadata for its search entries),
and otherwise does the work itself. Nothing the user sees depends on which process did it: tests/test_parallel.py
builds the site both ways and compares every byte.

Two users:

- :class:`HelperBuild`, driven by the transformer-trace plugin during `mkdocs build` (and the serve process's full
  builds): the child reads, converts and indexes a share of the pages while the parent does the others; the parent
  still runs every plugin event and renders every page's template, in MkDocs' own order.
- generator/site/warm_site.py renders the pages a regeneration changed, half of them in a child.

The child dies with its parent (Linux's parent-death signal, as the figure workers), writes its results into a
private temporary folder (announced on a pipe: a large page never blocks it), sends back the log records of the work
it did for the parent (so `--strict` still counts their warnings), and exits without running the parent's exit
handlers. ``TT_PAGE_HELPER=0`` turns the helper off.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import pickle
import select
import shutil
import signal
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from transformer_trace.processes import die_with_parent, signals_held_over_fork
from transformer_trace.site import highlight_cache

log = logging.getLogger("transformer_trace")

STALLED_S = 5.0  # a helper that sends nothing for this long is stopped (a lock a thread held at the fork, say): the
# parent then does its pages, so the worst case costs seconds, not a stuck regeneration; a page takes well under 1 s


def enabled() -> bool:
    """Whether a helper process can pay: two cores or more, fork, and not turned off."""
    return hasattr(os, "fork") and (os.cpu_count() or 1) >= 2 and os.environ.get("TT_PAGE_HELPER", "1") != "0"


def digest(text: str | None) -> str:
    return hashlib.blake2b((text or "").encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


# ----------------------------------------------------------------------------- log records of the child's work

_capturing: list | None = None  # in the child: where records go (None: dropped, the parent logs that work itself)


def _portable(record: logging.LogRecord) -> logging.LogRecord:
    """The record with its message formatted and its traceback as text: picklable, whatever its arguments."""
    record.msg, record.args = record.getMessage(), None
    if record.exc_info:
        record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        record.exc_info = None
    return record


def _child_call_handlers(logger: logging.Logger, record: logging.LogRecord) -> None:
    if _capturing is not None:
        _capturing.append(_portable(record))


@contextmanager
def records_of(into: list | None) -> Iterator[None]:
    """In the child: keep the log records emitted inside the block in ``into`` (None: drop them)."""
    global _capturing
    saved, _capturing = _capturing, into
    try:
        yield
    finally:
        _capturing = saved


def replay(records: list[logging.LogRecord]) -> None:
    """Log, in the parent, what the child logged while doing the parent's work."""
    for record in records:
        logging.getLogger(record.name).handle(record)


# ----------------------------------------------------------------------------- the collector

_frozen = 0  # nesting depth of freeze_heap()
_frozen_lock = threading.Lock()  # the serve process's thread finishing pages after an answer freezes and thaws too


def freeze_heap() -> None:
    """Leave the objects that exist now (the models, MkDocs' configuration, theme and pages) out of garbage collection
    until the matching thaw_heap(): the collector then walks only what is created meanwhile, and a forked helper does
    not copy memory pages for the collector's bookkeeping of them (gc.freeze)."""
    global _frozen
    with _frozen_lock:
        if _frozen == 0:
            gc.freeze()
        _frozen += 1


def thaw_heap() -> None:
    """Hand the objects frozen by the outermost freeze_heap() back to the collector (gc.unfreeze): nothing leaks."""
    global _frozen
    with _frozen_lock:
        _frozen -= 1
        if _frozen == 0:
            gc.unfreeze()


@contextmanager
def heap_frozen() -> Iterator[None]:
    freeze_heap()
    try:
        yield
    finally:
        thaw_heap()


# ----------------------------------------------------------------------------- the child process


class Helper:
    """A child forked now that runs ``work(send)``; ``send(key, value)`` hands one result to the parent, which reads
    it with :meth:`get`. :meth:`close` kills the child if it still runs and removes its folder."""

    def __init__(self, work: Callable[[Callable[[str, Any], None]], None]) -> None:
        self.dir = tempfile.mkdtemp(prefix="tt-pages-")
        read_end, write_end = os.pipe()
        parent = os.getpid()
        with signals_held_over_fork():
            pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(read_end)
                die_with_parent(parent)
                # nothing is printed from here: every logger's records are kept for the parent (a patch of the class
                # in the forked child alone, which mypy refuses for any method)
                logging.Logger.callHandlers = _child_call_handlers  # type: ignore[method-assign, assignment]
                highlight_cache.start_recording()  # what it highlights goes back to the parent
                self._run(work, os.fdopen(write_end, "w", encoding="utf-8"))
                code = 0
            except BaseException:  # noqa: BLE001 - the parent does whatever was not sent
                pass
            finally:
                os._exit(code)
        os.close(write_end)
        self.pid: int | None = pid
        self._fd: int | None = read_end
        self._buffer = b""
        self._ready: dict[str, str] = {}
        self._ended = False

    def _run(self, work, pipe) -> None:
        count = 0

        def send(key: str, value: Any) -> None:
            nonlocal count
            path = os.path.join(self.dir, f"{count}.pickle")
            with open(path + ".tmp", "wb") as f:
                pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(path + ".tmp", path)
            pipe.write(f"{count}\t{json.dumps(key)}\n")
            pipe.flush()
            count += 1

        work(send)

    def get(self, key: str) -> Any:
        """The child's result for ``key``, waiting for it; None when the child ended without sending one, or sent
        nothing for STALLED_S (it is then stopped: the caller does the work)."""
        while key not in self._ready and not self._ended:
            if b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                index, name = line.decode("utf-8").split("\t", 1)
                self._ready[json.loads(name)] = os.path.join(self.dir, f"{index}.pickle")
                continue
            fd = self._fd
            if fd is None:  # closed
                break
            if not select.select([fd], [], [], STALLED_S)[0]:
                log.info("site: the pages helper sent nothing for %.0f s; this process does its pages", STALLED_S)
                self._stop()
                break
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self._ended = True
            self._buffer += chunk
        path = self._ready.pop(key, None)
        if path is None:
            return None
        try:
            with open(path, "rb") as f:
                return pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            return None

    def _stop(self) -> None:
        self._ended = True
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = None

    def close(self) -> None:
        self._stop()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        shutil.rmtree(self.dir, ignore_errors=True)


def split(items: list, cost: Callable[[Any], float], share: float) -> tuple[list, list]:
    """``items`` in two lists (each in the original order), the second holding about ``share`` of the total ``cost``:
    the costliest first, each to the list further below its part."""
    theirs, load = set(), [0.0, 0.0]  # the parent's, the child's
    for index in sorted(range(len(items)), key=lambda i: -cost(items[i])):
        if load[1] / share <= load[0] / (1 - share):
            theirs.add(index)
            load[1] += cost(items[index])
        else:
            load[0] += cost(items[index])
    return ([item for i, item in enumerate(items) if i not in theirs],
            [item for i, item in enumerate(items) if i in theirs])


# What a page costs, in bytes of Markdown: its size, plus the fixed work of any page. Measured on the reports' pages:
# converting and indexing one costs about what 2 kB more of Markdown cost; a whole page (its template and navigation
# too, as the serve process renders them) about 11 kB.
PAGE_BYTES_CONVERTED, PAGE_BYTES_RENDERED = 2_000, 11_000


def _markdown_cost(file) -> int:
    try:
        return os.path.getsize(file.abs_src_path) + PAGE_BYTES_CONVERTED
    except (OSError, TypeError):
        return PAGE_BYTES_CONVERTED


# ----------------------------------------------------------------------------- page state


def page_state(page) -> dict[str, Any]:
    """What MkDocs' ``Page.render`` sets on a page, in picklable form (linked files by path)."""
    links = page.links_to_anchors
    return {"content": page.content, "toc": page.toc, "_title_from_render": page._title_from_render,
            "present_anchor_ids": page.present_anchor_ids,
            "links_to_anchors": None if links is None else {f.src_uri: dict(v) for f, v in links.items()}}


def set_page_state(page, state: dict[str, Any], files) -> None:
    links = state["links_to_anchors"]
    page.content, page.toc = state["content"], state["toc"]
    page._title_from_render = state["_title_from_render"]
    page.present_anchor_ids = state["present_anchor_ids"]
    page.links_to_anchors = None if links is None else {files.get_file_from_path(uri): v for uri, v in links.items()}


def search_plugin(config):
    """The search plugin (MkDocs' or Material's), whose index pages are added to; None without one."""
    for plugin in config.plugins.values():
        if hasattr(plugin, "search_index") and hasattr(plugin, "on_post_build"):
            return plugin
    return None


def search_entries(search, page) -> list[dict]:
    """The entries ``page`` adds to the search index (the index's other entries kept aside)."""
    index = search.search_index
    saved, index.entries = index.entries, []
    try:
        index.add_entry_from_context(page)
        return index.entries
    finally:
        index.entries = saved


def _search_key(page) -> tuple:
    return digest(page.content), page.title, page.url, repr(sorted(page.meta.items(), key=str))


# ----------------------------------------------------------------------------- a full `mkdocs build`


class HelperBuild:
    """One `mkdocs build` with a share of its Markdown pages read, converted and indexed for search in a child.

    The plugin makes one once the navigation is set (every page object exists), calls :meth:`on_pre_page` for
    every page, and :meth:`close` when the build ends. For the child's pages, the parent still reads the source and
    runs every plugin event; only ``Page.render`` (the Markdown conversion) and the search index's
    ``add_entry_from_context`` take the child's result, each when its input is identical to the child's.
    """

    SHARE = 0.5  # of the Markdown bytes (the child sends its pages' HTML first, their search entries after)

    def __init__(self, config, files) -> None:
        self.config, self.files = config, files
        pages = [f for f in files.documentation_pages() if f.page is not None and f.src_uri.endswith(".md")]
        _, theirs = split(pages, _markdown_cost, self.SHARE)
        self.share = {f.src_uri for f in theirs}
        self.search = search_plugin(config)
        self.used: dict[str, Any] = {}  # src_uri -> the table of contents of a render taken from the child
        self.taken = {"renders": 0, "search entries": 0}
        self.in_child = False
        self._installed: dict[str, tuple] = {}  # src_uri -> (page, its own render or None) while ours is set
        self._closed = False
        freeze_heap()
        try:
            self.helper = Helper(lambda send: self._child(theirs, send))
        except BaseException:
            thaw_heap()
            raise
        self._wrapped = None
        if self.search is not None and getattr(self.search, "search_index", None) is not None:
            index = self.search.search_index
            original = index.add_entry_from_context
            index.add_entry_from_context = lambda page: self._add_entry(index, page, original)
            self._wrapped = index

    def _child(self, files: list, send) -> None:
        """Convert the share's Markdown first (the parent needs it soonest), then index the pages for search."""
        self.in_child = True
        config, plugins = self.config, self.config.plugins
        pages = []
        for file in files:
            page = file.page
            config._current_page = page
            with records_of(None):  # the parent runs these steps itself, and logs them
                page = plugins.on_pre_page(page, config=config, files=self.files)
                page.read_source(config)
                page.markdown = plugins.on_page_markdown(page.markdown, page=page, config=config, files=self.files)
            source = digest(page.markdown)
            rendered: list = []
            with records_of(rendered):
                page.render(config, self.files)
            send("render:" + file.src_uri, (source, page_state(page), rendered, highlight_cache.taken()))
            with records_of(None):
                page.content = plugins.on_page_content(page.content, page=page, config=config, files=self.files)
            config._current_page = None
            pages.append(page)
        if self.search is None or not self.search.config.get("enabled", True):
            return
        for page in pages:
            indexed: list = []
            with records_of(indexed):
                entries = search_entries(self.search, page)
            send("search:" + page.file.src_uri, (_search_key(page), entries, indexed))

    def on_pre_page(self, page) -> None:
        """For a page of the child's share: its next ``render`` takes the child's result (then is MkDocs' again)."""
        if self.in_child or page.file.src_uri not in self.share or page.file.src_uri in self._installed:
            return
        own = vars(page).get("render")  # another plugin's render for this page (MkDocs-Jupyter sets one), or None

        def render(config, files):
            self._restore(page.file.src_uri)
            result = self.helper.get("render:" + page.file.src_uri)
            if result is None or result[0] != digest(page.markdown):
                return page.render(config, files)
            _source, state, rendered, highlighted = result
            highlight_cache.merge(highlighted)
            set_page_state(page, state, files)
            replay(rendered)
            self.used[page.file.src_uri] = page.toc
            self.taken["renders"] += 1

        self._installed[page.file.src_uri] = (page, own)
        page.render = render

    def _restore(self, src_uri: str) -> None:
        page, own = self._installed.pop(src_uri)
        if own is None:
            vars(page).pop("render", None)
        else:
            page.render = own

    def _add_entry(self, index, page, original) -> None:
        """``index``'s add_entry_from_context while the child indexes pages: its entries for ``page`` when it sent
        them for this very page, else ``original``'s."""
        toc = self.used.pop(page.file.src_uri, None)
        result = self.helper.get("search:" + page.file.src_uri) if toc is not None else None
        if result is not None:
            key, entries, indexed = result
            if page.toc is toc and key == _search_key(page):
                index.entries.extend(entries)
                replay(indexed)
                self.taken["search entries"] += 1
                return
        original(page)

    @classmethod
    def start(cls, config, files) -> HelperBuild | None:
        """A HelperBuild, or None when no process can be forked now (MkDocs then does every page, as always)."""
        try:
            return cls(config, files)
        except OSError as exc:
            log.info("site: no pages helper (%s); MkDocs does every page", exc)
            return None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        log.debug("pages helper: the HTML of %d of its %d pages taken, and the search entries of %d",
                  self.taken["renders"],
                  len(self.share), self.taken["search entries"])
        if self._wrapped is not None:
            vars(self._wrapped).pop("add_entry_from_context", None)
            self._wrapped = None
        for src_uri in list(self._installed):  # a render the build never called: the page's own again
            self._restore(src_uri)
        self.helper.close()
        thaw_heap()
