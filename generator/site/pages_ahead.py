"""Pages of a generator staging folder rendered ahead of the swap, while the figures are drawn in worker processes.

Half of them (by cost) are rendered in a helper process forked for it (generator/site/parallel.py), which sends back
each page's state; :meth:`WarmSite.update` then only moves in each page whose Markdown in docs/ is byte-identical to
the one rendered ahead.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_trace.site import highlight_cache
from transformer_trace.site.page_render import (API_CHANGED, nav_entry, render_with_entries, rendered_state,
                                                set_rendered_state)
from transformer_trace.site.parallel import search_plugin as _search_plugin

if TYPE_CHECKING:
    from mkdocs.structure.files import File

    from transformer_trace.site.warm_site import WarmSite

    _Changed = tuple[str, File, str, int]  # a changed page: its src_uri, File, digest and size

log = logging.getLogger("transformer_trace")

AFTER_ANSWER = "print.md"  # pages rendered after a regeneration's answer (the print views: every snapshot's body again,
# a quarter of a report's page work, opened from the navigation, never the page a form is on); held until current


def after_answer(src_uri: str) -> bool:
    """Whether the page at ``src_uri`` may be finished after the regeneration answered (see WarmSite.update)."""
    return src_uri.rsplit("/", 1)[-1] == AFTER_ANSWER


@dataclass
class PageAhead:
    digest: str  # of the Markdown it was rendered from
    html: Path
    nav: tuple  # the page's navigation entry (nav_entry) after rendering, and before
    old_nav: tuple
    entries: list[dict]


# changed pages from which about half of them are rendered in a second process (generator/site/parallel.py)
PARALLEL_FROM = 4
HELPER_SHARE = 0.45  # of their cost: the helper starts late (forked) and shares the cores with the figure workers


class PagesAhead:
    """Pages of a generator staging folder rendered before the swap, while the figures are drawn in worker processes
    (which leaves this process idle). Each is read from a ``File`` of the staging folder and written into a
    temporary folder; :meth:`WarmSite.update` moves one in only if the Markdown then in docs/ is byte-identical to
    what was rendered, and renders the others as usual."""

    def __init__(self, site: WarmSite) -> None:
        self.site = site
        self.pages: dict[str, PageAhead] = {}
        self._dir: Path | None = None

    def render(self, staging: Path) -> int:
        try:
            return self._render(staging)
        except API_CHANGED as exc:
            # What was rendered ahead so far is dropped too: the next update builds fully anyway.
            self.site.give_up_partial(exc)
            self.drop()
            return 0

    def _render(self, staging: Path) -> int:
        from transformer_trace.site import parallel

        site = self.site
        files, _, _ = site._capture.captured()
        built = site.built
        if built is None:  # no build yet, so none to render ahead of
            return 0
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="tt-ahead-"))
        todo: list[_Changed] = []  # (src_uri, File, digest, size) of each changed page
        for path in sorted(staging.rglob("*.md")):
            src_uri = path.relative_to(staging).as_posix()
            file = files.get_file_from_path(src_uri)
            if file is None or file.page is None or src_uri in self.pages or after_answer(src_uri):
                continue
            try:
                source = path.read_bytes()
            except OSError:
                continue
            digest = hashlib.blake2b(source, digest_size=16).hexdigest()
            if digest != built.get(src_uri):
                todo.append((src_uri, file, digest, len(source)))
        mine: list[_Changed] = todo
        theirs: list[_Changed] = []
        if len(todo) >= PARALLEL_FROM and parallel.enabled():  # half of them in a second process
            mine, theirs = parallel.split(todo, lambda item: item[3] + parallel.PAGE_BYTES_RENDERED, HELPER_SHARE)
        helper = None
        if theirs:
            try:
                helper = parallel.Helper(lambda send: self._render_in_child(theirs, staging, send))
            except OSError as exc:  # no process can be forked now: every page here
                log.info("site: no pages helper (%s)", exc)
                mine, theirs = todo, []
        try:
            for src_uri, file, digest, _ in mine:
                self._render_one(src_uri, file, digest, staging)
            for src_uri, file, digest, _ in theirs:
                result = helper.get(src_uri) if helper is not None else None
                if result is None:  # the helper could not: here, as the others
                    self._render_one(src_uri, file, digest, staging)
                    continue
                ahead, state, records, highlighted = result
                highlight_cache.merge(highlighted)
                set_rendered_state(file.page, state, files)
                parallel.replay(records)
                self.pages[src_uri] = ahead
        finally:
            if helper is not None:
                helper.close()
        return len(todo)

    def _render_one(self, src_uri: str, file, digest: str, staging: Path) -> PageAhead:
        """Render the page of ``file`` from its Markdown in ``staging`` into the temporary folder."""
        from mkdocs.structure.files import File

        site = self.site
        page, old_nav = file.page, nav_entry(file.page)
        staged = File(src_uri, str(staging), str(self._dir), file.use_directory_urls, dest_uri=file.dest_uri,
                      inclusion=file.inclusion)
        staged.page = page
        page.file = staged  # the page reads the staged Markdown and writes into the temporary folder
        try:
            entries = render_with_entries(site, page, _search_plugin(site.config))
        finally:
            page.file = file
        self.pages[src_uri] = PageAhead(digest, Path(staged.abs_dest_path), nav_entry(page), old_nav, entries)
        return self.pages[src_uri]

    def _render_in_child(self, items: list, staging: Path, send) -> None:
        """In the helper process: render ``items`` as the parent would, and send each page's result and state."""
        from transformer_trace.site import parallel

        for src_uri, file, digest, _ in items:
            records: list = []
            with parallel.records_of(records):
                ahead = self._render_one(src_uri, file, digest, staging)
            send(src_uri, (ahead, rendered_state(file.page), records, highlight_cache.taken()))

    def matching(self, files: list, digests: dict[str, str]) -> dict[str, PageAhead]:
        """The pages rendered ahead from the very Markdown ``files`` now hold (``digests``: docs/ now)."""
        return {
            f.src_uri: self.pages[f.src_uri]
            for f in files
            if f.src_uri in self.pages and self.pages[f.src_uri].digest == digests[f.src_uri]
        }

    def drop(self) -> None:
        self.pages = {}
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
