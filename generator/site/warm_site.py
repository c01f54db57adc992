"""MkDocs kept warm: the configuration is loaded once, and a rebuild renders only the pages that changed.

`python -m transformer_trace serve` regenerates reports in a long-lived process. After the generator
rewrote docs/, :meth:`WarmSite.update` compares file digests with the last build and

- rebuilds only the changed Markdown pages (Markdown, the theme template, the search entries
  of those pages) and copies only the changed static files (figures, snapshots.json), when
  the set of files and the navigation are unchanged;
- runs a full MkDocs build (still in this process: plugins, extensions and the theme stay
  loaded) when files appeared or disappeared or the navigation changed.

Material's search index (search/search_index.json) is always rewritten complete: the entries
of the rebuilt pages replace theirs, the others are kept. A partial build writes the same HTML
and index as a full one (tests/test_serve.py compares them).

MkDocs has no function that builds one page: :func:`render_page` (generator/site/page_render.py) runs the steps `mkdocs
build` runs for a page,
through MkDocs' public API (the plugin events, ``Page.read_source`` and ``render``, ``get_context``, the theme's
Jinja environment). pyproject allows any MkDocs 1.x, so when a release changes those, :meth:`WarmSite.update`
logs it and builds fully from then on (and nothing is rendered ahead): slower, never broken.

(generator/site/pages_ahead.py) :meth:`WarmSite.prerender` renders the changed pages of the generator's staging folder
while the
figures are still being drawn in worker processes (each page read from a ``File`` of the staging folder and
written into a temporary folder), half of them (by cost) in a helper process forked for it (generator/site/parallel.py),
which sends back each page's state; :meth:`update` then only moves them in, for each page whose Markdown in docs/
is byte-identical to the one rendered ahead. Pages rendered side by side see each other's navigation entries as they
were before; a page whose title or metadata changed therefore gives a full build, as it always did.

The print views (print.md: every snapshot's body again, about a quarter of a report's page work) are not rendered ahead:
:meth:`WarmSite.update` returns once the other pages are in place (the regeneration answers), and renders them in a
thread right after; until they are written, :meth:`WarmSite.held` tells the server to hold any request for them or for
the search index, so no page of the last run is ever served. Every other call waits for that thread first (settle).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformer_trace.errors import UserError
from transformer_trace.site.page_render import API_CHANGED, Capture, nav_entry, render_with_entries
from transformer_trace.site.pages_ahead import PageAhead, PagesAhead, after_answer
from transformer_trace.site.parallel import freeze_heap, thaw_heap
from transformer_trace.site.parallel import search_plugin as _search_plugin

if TYPE_CHECKING:
    from mkdocs.structure.files import File

log = logging.getLogger("transformer_trace")

class _Finishing:
    """Pages an update finishes after it returned, in a thread: the site paths held until they are current."""

    def __init__(self, paths: set[str]) -> None:
        self.paths = paths  # normalised absolute paths of the files not yet current (pages, the search index)
        self.done = threading.Event()
        self.thread: threading.Thread | None = None


@dataclass
class SiteUpdate:
    kind: str  # "none", "pages" or "full"
    pages: list[str] = field(default_factory=list)  # Markdown pages rebuilt (src paths), those finished later included
    static: list[str] = field(default_factory=list)  # other files copied
    seconds: float = 0.0
    reason: str = ""
    # of the pages, those rendered after update() returned (settle() waits)
    later: list[str] = field(default_factory=list)


RACY_S = 2.0  # a file changed this recently may change again within its timestamps' resolution: hashed every time


def _digests(docs: Path, known: dict[str, tuple] | None = None) -> dict[str, str]:
    """Content digest of every file MkDocs reads from docs/ (dot files and folders are ignored, as MkDocs does).

    ``known`` (path -> (stat, digest)), kept by the caller and updated here, spares reading a file whose size, inode,
    modification and change times are those it had when it was hashed (as git's index does; the change time cannot
    be set back by any tool). A file changed within RACY_S of its hashing is hashed again next time."""
    out: dict[str, str] = {}
    seen: dict[str, tuple] = {}
    now = time.time_ns()
    for root, dirs, names in os.walk(docs, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel_root = Path(root).relative_to(docs)
        for name in names:
            if name.startswith("."):
                continue
            path = Path(root) / name
            rel = (rel_root / name).as_posix()
            try:
                st = os.stat(path)
                stamp = (st.st_size, st.st_ino, st.st_dev, st.st_mtime_ns, st.st_ctime_ns)
                if known is not None and rel in known and known[rel][0] == stamp:
                    out[rel] = known[rel][1]
                else:
                    out[rel] = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
            except OSError:
                continue
            if now - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_S * 1e9:
                seen[rel] = (stamp, out[rel])
    if known is not None:
        known.clear()
        known.update(seen)
    return out


def _nav_config(config, files) -> Any:
    """The navigation the transformer-trace plugin would set now (None when that cannot be told)."""
    plugin = config.plugins.get("transformer-trace")
    if plugin is None:
        return config.nav
    try:
        return plugin.site_nav(config, [f.src_uri for f in files.documentation_pages()] if files is not None else None)
    except Exception:  # noqa: BLE001 - then always build fully
        return None


class WarmSite:
    """One MkDocs configuration, loaded once, built fully or page by page."""

    def __init__(self, config_file: Path, docs: Path | None = None) -> None:
        os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
        from mkdocs.config import load_config
        from mkdocs.exceptions import ConfigurationError

        try:
            self.config = load_config(str(config_file), docs_dir=str(docs) if docs else None)
        except (ConfigurationError, OSError) as exc:
            raise UserError(f"cannot load the MkDocs configuration {config_file}: {exc}") from None
        self.config_file = config_file
        self.docs = Path(self.config.docs_dir)
        self.site = Path(self.config.site_dir)
        self._capture = Capture()
        self.config.plugins["tt-warm-site"] = self._capture
        self.config.plugins.on_startup(command="build", dirty=False)
        self.built: dict[str, str] | None = None  # digests of docs/ at the last build
        self._stamps: dict[str, tuple] = {}  # what _digests knows of each file
        self.nav_config: Any = None
        self.ahead = PagesAhead(self)  # pages rendered ahead from a staging folder (see prerender)
        self.partial_unavailable: str | None = None  # why pages cannot be built one by one with this MkDocs
        # What update() takes to replace the site's files while they are served (the server's write lock): the pages
        # finished after an update take it for a full build, should one be needed.
        self.write_lock: Callable[[], AbstractContextManager] = nullcontext
        self.later = PagesFinishedLater(self)  # the print views an update renders after it returned

    def close(self) -> None:
        self.settle()
        self.ahead.drop()
        self.config.plugins.on_shutdown()

    def settle(self) -> None:
        """Wait until the pages the last update left to finish are written (every other call waits too)."""
        self.later.settle()

    def held(self, path: Path | str) -> threading.Event | None:
        """None when the site's file at ``path`` is current, else the event set once it is (PagesFinishedLater.held)."""
        return self.later.held(path)

    def wait_current(self, path: Path | str) -> None:
        """Return once the site's file at ``path`` is current (see held)."""
        if (done := self.held(path)) is not None:
            done.wait()

    def full_build(self, reason: str = "") -> SiteUpdate:
        self.settle()
        return self._full_build(reason)

    def _full_build(self, reason: str = "") -> SiteUpdate:
        from mkdocs.commands.build import build
        from mkdocs.exceptions import Abort, BuildError

        started = time.perf_counter()
        self.ahead.drop()
        digests = _digests(self.docs, self._stamps)
        self.built = None  # until this build succeeds, the next update is a full build
        try:
            build(self.config)
        except (Abort, BuildError) as exc:
            raise UserError(f"mkdocs build failed: {exc}") from None
        self.built = digests
        self.nav_config = _nav_config(self.config, self._capture.files)
        return SiteUpdate("full", seconds=time.perf_counter() - started, reason=reason)

    def update(self) -> SiteUpdate:
        """Bring the site in line with docs/: nothing, the changed pages only, or a full build.

        Of the changed pages, the print views (after_answer) are rendered after this returns, in a thread, while
        :meth:`wait_current` holds any reader of them, and of the search index, until they are written."""
        self.settle()
        if self.built is None or self._capture.files is None:
            return self._full_build("first build")
        started = time.perf_counter()
        now = _digests(self.docs, self._stamps)
        if now.keys() != self.built.keys():
            added, removed = sorted(now.keys() - self.built.keys()), sorted(self.built.keys() - now.keys())
            return self._full_build(f"files added ({len(added)}) or removed ({len(removed)})")
        changed = sorted(path for path, digest in now.items() if self.built[path] != digest)
        if not changed:
            return SiteUpdate("none", seconds=time.perf_counter() - started)
        nav = _nav_config(self.config, self._capture.files)
        if nav is None or nav != self.nav_config:
            return self._full_build("the navigation changed")
        files = self._capture.files
        pages: list[File] = []
        static: list[File] = []
        for path in changed:
            file = files.get_file_from_path(path)
            if file is None:  # not part of the site (excluded), nothing to do
                continue
            (pages if file.is_documentation_page() else static).append(file)
        if any(f.page is None for f in pages):
            return self._full_build("a changed page is not in the last build")
        if self.partial_unavailable is not None:
            return self._full_build(self.partial_unavailable)
        self.built = None  # a failure below leaves the next update a full build
        ahead = self.ahead.matching(pages, now)
        later = [f for f in pages if after_answer(f.src_uri) and f.src_uri not in ahead]
        try:
            retitled = rebuild_pages(self, [f for f in pages if f not in later], ahead)
        except API_CHANGED as exc:
            return self._full_build(self.give_up_partial(exc))
        finally:
            self.ahead.drop()
        if retitled:  # a page title shows in every page's navigation
            return self._full_build(f"the title or metadata of {retitled[0]} changed")
        for file in static:
            file.copy_file(dirty=False)
        self.built = now
        if later:
            self.later.start(later)
        reasons = [f"{len(ahead)} rendered ahead" if ahead else "", f"{len(later)} finished after it" if later else ""]
        return SiteUpdate("pages", [f.src_uri for f in pages], [f.src_uri for f in static],
                          time.perf_counter() - started,
                          reason=", ".join(r for r in reasons if r), later=[f.src_uri for f in later])

    def give_up_partial(self, exc: BaseException) -> str:
        """Remember (and log once) that this MkDocs cannot build page by page; the reason, for a full build."""
        self.partial_unavailable = (
            f"partial builds need MkDocs internals this version changed ({type(exc).__name__}: {exc})"
        )
        log.warning("site: %s; every update is a full build from now on", self.partial_unavailable)
        return self.partial_unavailable

    def prerender(self, staging: Path) -> int:
        """Render, ahead of the swap, the pages of a generator staging folder that differ from the last build
        (see PagesAhead); how many."""
        self.settle()
        if self.built is None or self._capture.files is None or self.partial_unavailable is not None:
            return 0
        return self.ahead.render(staging)

    def abandon_ahead(self) -> None:
        """The generator failed after pages were rendered ahead: their page objects hold Markdown that never
        reached docs/, so the next update is a full build."""
        self.settle()
        if self.ahead.pages:
            self.built = None
        self.ahead.drop()



def rebuild_pages(site: WarmSite, files: list, ahead: dict[str, PageAhead]) -> list[str]:
    """Render ``files`` again (Markdown, template, search entries), or move in their pages rendered ahead;
    the paths whose navigation entry (title or metadata) changed."""
    search = _search_plugin(site.config)
    before = {f.src_uri: ahead[f.src_uri].old_nav if f.src_uri in ahead else nav_entry(f.page) for f in files}
    urls = {f.page.url for f in files}
    previous = list(search.search_index.entries) if search is not None else []
    results = []  # (path, navigation entry, search entries): the pages rendered ahead first, then the others
    for file in files:
        if file.src_uri in ahead:
            done = ahead[file.src_uri]
            os.makedirs(os.path.dirname(file.abs_dest_path), exist_ok=True)
            shutil.move(done.html, file.abs_dest_path)
            results.append((file.src_uri, done.nav, done.entries))
    for file in files:
        if file.src_uri not in ahead:
            page_entries = render_with_entries(site, file.page, search)
            results.append((file.src_uri, nav_entry(file.page), page_entries))
    after = {src_uri: nav for src_uri, nav, _ in results}
    entries = [entry for _, _, page_entries in results for entry in page_entries]
    if search is not None:
        kept = [e for e in previous if e["location"].split("#", 1)[0] not in urls]
        search.search_index.entries = kept + entries
        search.on_post_build(config=site.config)  # writes search/search_index.json, complete
    return [path for path, nav in after.items() if nav != before[path]]

class PagesFinishedLater:
    """The pages an update renders after it returned (the print views: a quarter of a regeneration's page work, and no
    reader needs them at once), in a thread; until they are written, :meth:`held` holds any reader of them and of the
    search index, so the server never sends a page of the last run."""

    def __init__(self, site: WarmSite) -> None:
        self.site = site
        self.current: _Finishing | None = None

    def settle(self) -> None:
        """Wait until the pages the last update left to finish are written (every other call waits too)."""
        finishing, self.current = self.current, None
        if finishing is not None and finishing.thread is not None:
            finishing.thread.join()

    def held(self, path: Path | str) -> threading.Event | None:
        """None when the site's file at ``path`` (a folder: its index.html) is current; otherwise the event set once it
        is: a page the last update is still finishing, or the search index meanwhile. Asked under the server's read
        lock, which update() holds as a writer (so a page it leaves to finish is never read before it says so)."""
        finishing = self.current
        if finishing is None or finishing.done.is_set():
            return None
        path = os.path.normpath(path)
        return finishing.done if path in finishing.paths or os.path.join(path,
                                                                         "index.html") in finishing.paths else None

    def start(self, files: list) -> None:
        """Render ``files`` in a thread, holding their pages and the search index (see held) meanwhile."""
        search = _search_plugin(self.site.config)
        held = {os.path.normpath(f.abs_dest_path) for f in files}
        if search is not None:
            held.add(os.path.normpath(os.path.join(self.site.config.site_dir, "search", "search_index.json")))
        finishing = _Finishing(held)
        finishing.thread = threading.Thread(target=self._finish, args=(files, search, finishing),
                                            name="tt-finish-pages")
        self.current = finishing
        freeze_heap()  # thawed by the thread: the collector does not walk the loaded site and models meanwhile
        try:
            finishing.thread.start()
        except BaseException:
            thaw_heap()
            raise

    def _finish(self, files: list, search, finishing: _Finishing) -> None:
        """The thread of start: render each page as update() would have; a changed title or metadata, or any
        failure, gives a full build (the site is never left with a stale page)."""
        try:
            urls = {f.page.url for f in files}
            old = (
                [e for e in search.search_index.entries if e["location"].split("#", 1)[0] in urls]
                if search is not None
                else []
            )
            entries, retitled = [], []
            for file in files:
                before = nav_entry(file.page)
                entries += render_with_entries(self.site, file.page, search)
                if nav_entry(file.page) != before:
                    retitled.append(file.src_uri)
            if retitled:
                self._full_build_after(f"the title or metadata of {retitled[0]} changed")
            elif search is not None and entries != old:  # a print view is excluded from search: none, as before
                kept = [e for e in search.search_index.entries if e["location"].split("#", 1)[0] not in urls]
                search.search_index.entries = kept + entries
                search.on_post_build(config=self.site.config)
        except API_CHANGED as exc:
            self._full_build_after(self.site.give_up_partial(exc))
        except Exception as exc:  # noqa: BLE001 - MkDocs logged the page's error; build fully, as update() would
            log.warning("site: finishing %s failed (%s: %s); building fully", ", ".join(f.src_uri for f in files),
                        type(exc).__name__, exc)
            self._full_build_after("a page finished after the answer failed")
        finally:
            finishing.done.set()
            thaw_heap()

    def _full_build_after(self, reason: str) -> None:
        self.site.built = None
        try:
            with self.site.write_lock():
                update = self.site._full_build(reason)
            log.info("site: full build, %.2f s (%s)", update.seconds, reason)
        except UserError as exc:
            log.warning("site not rebuilt: %s", exc)
