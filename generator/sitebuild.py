"""MkDocs kept warm: the configuration is loaded once, and a rebuild renders only the pages that changed.

`python -m generator serve` regenerates reports in a long-lived process. After the generator
rewrote docs/, :meth:`WarmSite.update` compares file digests with the last build and

- rebuilds only the changed Markdown pages (Markdown, the theme template, the search entries
  of those pages) and copies only the changed static files (figures, snapshots.json), when
  the set of files and the navigation are unchanged;
- runs a full MkDocs build (still in this process: plugins, extensions and the theme stay
  loaded) when files appeared or disappeared or the navigation changed.

Material's search index (search/search_index.json) is always rewritten complete: the entries
of the rebuilt pages replace theirs, the others are kept. A partial build writes the same HTML
and index as a full one (tests/test_serve.py compares them).

MkDocs has no public API for building one page: the partial build calls two private functions of
mkdocs.commands.build and overrides two cached properties of a File. pyproject allows any MkDocs
1.x, so when a release changes those, :meth:`WarmSite.update` logs it and builds fully from then on
(and nothing is rendered ahead): slower, never broken.

:meth:`WarmSite.prerender` renders the changed pages of the generator's staging folder while the
figures are still being drawn in worker processes; :meth:`update` then only moves them in, for
each page whose Markdown in docs/ is byte-identical to the one rendered ahead.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.errors import UserError

log = logging.getLogger("generator")

# What calling MkDocs internals raises once a release renamed, removed or changed them.
INTERNALS_CHANGED = (ImportError, AttributeError, TypeError)


class MkDocsInternalsChanged(Exception):
    """MkDocs no longer has the internals a partial build uses (see the module docstring)."""


def _page_builders():
    """MkDocs' private ``_populate_page`` and ``_build_page``, the steps `mkdocs build` runs for one page
    (AttributeError when this MkDocs has them no more)."""
    from mkdocs.commands import build as mkdocs_build

    return mkdocs_build._populate_page, mkdocs_build._build_page


@dataclass
class _Ahead:
    digest: str  # of the Markdown it was rendered from
    html: Path
    title: str | None
    old_title: str | None
    entries: list[dict]


@dataclass
class SiteUpdate:
    kind: str  # "none", "pages" or "full"
    pages: list[str] = field(default_factory=list)  # Markdown pages rebuilt (src paths)
    static: list[str] = field(default_factory=list)  # other files copied
    seconds: float = 0.0
    reason: str = ""


def _digests(docs: Path) -> dict[str, str]:
    """Content digest of every file MkDocs reads from docs/ (dot files and folders are ignored, as MkDocs does)."""
    out: dict[str, str] = {}
    for root, dirs, names in os.walk(docs, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel_root = Path(root).relative_to(docs)
        for name in names:
            if name.startswith("."):
                continue
            path = Path(root) / name
            try:
                out[(rel_root / name).as_posix()] = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
            except OSError:
                continue
    return out


class _Capture:
    """A plugin that keeps the build's files, navigation and Jinja environment for later partial builds."""

    def __init__(self) -> None:
        self.files = self.nav = self.env = None

    def on_nav(self, nav, *, config, files):
        self.files, self.nav = files, nav
        return nav

    def on_env(self, env, *, config, files):
        self.env = env
        return env


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
        self._capture = _Capture()
        self.config.plugins["tt-warm-site"] = self._capture
        self.config.plugins.on_startup(command="build", dirty=False)
        self.built: dict[str, str] | None = None  # digests of docs/ at the last build
        self.nav_config: Any = None
        self._ahead: dict[str, _Ahead] = {}  # pages rendered ahead from a staging folder (see prerender)
        self._ahead_dir: Path | None = None
        self.partial_unavailable: str | None = None  # why pages cannot be built one by one with this MkDocs

    def close(self) -> None:
        self._drop_ahead()
        self.config.plugins.on_shutdown()

    # ------------------------------------------------------------------ builds

    def full_build(self, reason: str = "") -> SiteUpdate:
        from mkdocs.commands.build import build
        from mkdocs.exceptions import Abort, BuildError

        started = time.perf_counter()
        self._drop_ahead()
        digests = _digests(self.docs)
        self.built = None  # until this build succeeds, the next update is a full build
        try:
            build(self.config)
        except (Abort, BuildError) as exc:
            raise UserError(f"mkdocs build failed: {exc}") from None
        self.built = digests
        self.nav_config = self._nav_config()
        return SiteUpdate("full", seconds=time.perf_counter() - started, reason=reason)

    def update(self) -> SiteUpdate:
        """Bring the site in line with docs/: nothing, the changed pages only, or a full build."""
        if self.built is None or self._capture.files is None:
            return self.full_build("first build")
        started = time.perf_counter()
        now = _digests(self.docs)
        if now.keys() != self.built.keys():
            added, removed = sorted(now.keys() - self.built.keys()), sorted(self.built.keys() - now.keys())
            return self.full_build(f"files added ({len(added)}) or removed ({len(removed)})")
        changed = sorted(path for path, digest in now.items() if self.built[path] != digest)
        if not changed:
            return SiteUpdate("none", seconds=time.perf_counter() - started)
        nav = self._nav_config()
        if nav is None or nav != self.nav_config:
            return self.full_build("the navigation changed")
        files = self._capture.files
        pages, static = [], []
        for path in changed:
            file = files.get_file_from_path(path)
            if file is None:  # not part of the site (excluded), nothing to do
                continue
            (pages if file.is_documentation_page() else static).append(file)
        if any(f.page is None for f in pages):
            return self.full_build("a changed page is not in the last build")
        if self.partial_unavailable is not None:
            return self.full_build(self.partial_unavailable)
        self.built = None  # a failure below leaves the next update a full build
        ahead = {f.src_uri: self._ahead[f.src_uri] for f in pages if f.src_uri in self._ahead and self._ahead[f.src_uri].digest == now[f.src_uri]}
        try:
            retitled = self._rebuild_pages(pages, ahead)
        except (MkDocsInternalsChanged, *INTERNALS_CHANGED) as exc:
            return self.full_build(self._give_up_partial(exc))
        finally:
            self._drop_ahead()
        if retitled:  # a page title shows in every page's navigation
            return self.full_build(f"the title of {retitled[0]} changed")
        for file in static:
            file.copy_file(dirty=False)
        self.built = now
        return SiteUpdate("pages", [f.src_uri for f in pages], [f.src_uri for f in static], time.perf_counter() - started,
                          reason=f"{len(ahead)} rendered ahead" if ahead else "")

    def _rebuild_pages(self, files: list, ahead: dict[str, _Ahead]) -> list[str]:
        """Render ``files`` again (Markdown, template, search entries), or move in their pages rendered ahead;
        the paths whose title changed."""
        search = self._search_plugin()
        titles = {f.src_uri: ahead[f.src_uri].old_title if f.src_uri in ahead else f.page.title for f in files}
        urls = {f.page.url for f in files}
        previous = list(search.search_index.entries) if search is not None else []
        results = []
        for file in files:
            if file.src_uri in ahead:
                done = ahead[file.src_uri]
                os.makedirs(os.path.dirname(file.abs_dest_path), exist_ok=True)
                shutil.move(done.html, file.abs_dest_path)
                results.append((file.src_uri, done.title, done.entries))
        results += _render_pages(self, [f for f in files if f.src_uri not in ahead])
        new_titles = {}
        entries = []
        for src_uri, title, page_entries in results:
            new_titles[src_uri] = title
            entries += page_entries
        if search is not None:
            kept = [e for e in previous if e["location"].split("#", 1)[0] not in urls]
            search.search_index.entries = kept + entries
            search.on_post_build(config=self.config)  # writes search/search_index.json, complete
        return [path for path, title in new_titles.items() if title != titles[path]]

    def _give_up_partial(self, exc: BaseException) -> str:
        """Remember (and log once) that this MkDocs cannot build page by page; the reason, for a full build."""
        self.partial_unavailable = f"partial builds need MkDocs internals this version changed ({type(exc).__name__}: {exc})"
        log.warning("site: %s; every update is a full build from now on", self.partial_unavailable)
        return self.partial_unavailable

    def prerender(self, staging: Path) -> int:
        """Render, ahead of the swap, the pages of a generator staging folder that differ from the last build.

        Called while the figures are drawn in worker processes (which leaves this process idle). The
        HTML goes to a temporary folder; :meth:`update` moves a page in only if the Markdown then in
        docs/ is byte-identical to what was rendered, and renders the others as usual.
        """
        if self.built is None or self._capture.files is None or self.partial_unavailable is not None:
            return 0
        try:
            return self._prerender(staging)
        except (MkDocsInternalsChanged, *INTERNALS_CHANGED) as exc:
            # What was rendered ahead so far is dropped too: the next update builds fully anyway.
            self._give_up_partial(exc)
            self._drop_ahead()
            return 0

    def _prerender(self, staging: Path) -> int:
        populate_page, build_page = _page_builders()
        files, search = self._capture.files, self._search_plugin()
        doc_files = files.documentation_pages()
        if self._ahead_dir is None:
            self._ahead_dir = Path(tempfile.mkdtemp(prefix="tt-ahead-"))
        count = 0
        for path in sorted(staging.rglob("*.md")):
            src_uri = path.relative_to(staging).as_posix()
            file = files.get_file_from_path(src_uri)
            if file is None or file.page is None or src_uri in self._ahead:
                continue
            try:
                source = path.read_bytes()
            except OSError:
                continue
            digest = hashlib.blake2b(source, digest_size=16).hexdigest()
            if digest == self.built.get(src_uri):
                continue
            old_title = file.page.title
            real_src, real_dest = file.abs_src_path, file.abs_dest_path
            html = self._ahead_dir / file.dest_uri
            entries: list[dict] = []
            saved = search.search_index.entries if search is not None else None
            try:  # cached properties: overriding them on the instance points MkDocs at the staged copy and the temporary folder
                file.__dict__["abs_src_path"], file.__dict__["abs_dest_path"] = str(path), str(html)
                if (file.abs_src_path, file.abs_dest_path) != (str(path), str(html)):  # plain properties now: it would render docs/ over the site
                    raise MkDocsInternalsChanged("File.abs_src_path and abs_dest_path are no longer cached properties")
                if search is not None:
                    search.search_index.entries = entries
                populate_page(file.page, self.config, files)
                build_page(file.page, self.config, doc_files, self._capture.nav, self._capture.env)
            finally:
                file.__dict__["abs_src_path"], file.__dict__["abs_dest_path"] = real_src, real_dest
                if search is not None:
                    search.search_index.entries = saved
            self._ahead[src_uri] = _Ahead(digest, html, file.page.title, old_title, entries)
            count += 1
        return count

    def abandon_ahead(self) -> None:
        """The generator failed after pages were rendered ahead: their page objects hold Markdown that never
        reached docs/, so the next update is a full build."""
        if self._ahead:
            self.built = None
        self._drop_ahead()

    def _drop_ahead(self) -> None:
        self._ahead = {}
        if self._ahead_dir is not None:
            shutil.rmtree(self._ahead_dir, ignore_errors=True)
            self._ahead_dir = None

    def _search_plugin(self):
        for plugin in self.config.plugins.values():
            if hasattr(plugin, "search_index") and hasattr(plugin, "on_post_build"):
                return plugin
        return None

    def _nav_config(self) -> Any:
        """The navigation the transformer-trace plugin would set now (None when that cannot be told)."""
        plugin = self.config.plugins.get("transformer-trace")
        if plugin is None:
            return self.config.nav
        files = self._capture.files
        try:
            return plugin.site_nav(self.config, [f.src_uri for f in files.documentation_pages()] if files is not None else None)
        except Exception:  # noqa: BLE001 - then always build fully
            return None


def _render_pages(site: WarmSite, files: list) -> list[tuple[str, str | None, list[dict]]]:
    """Populate and write each page as `mkdocs build` does; (path, title, search entries) per page."""
    populate_page, build_page = _page_builders()
    config, capture = site.config, site._capture
    search = site._search_plugin()
    doc_files = capture.files.documentation_pages()
    out = []
    for file in files:
        populate_page(file.page, config, capture.files)
        if search is not None:
            search.search_index.entries = []
        build_page(file.page, config, doc_files, capture.nav, capture.env)
        out.append((file.src_uri, file.page.title, list(search.search_index.entries) if search is not None else []))
    if search is not None:
        search.search_index.entries = []  # the caller merges them back
    return out
