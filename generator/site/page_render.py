"""One page rendered as `mkdocs build` renders it, through MkDocs' public API, for the warm site's partial builds.

MkDocs has no function that builds one page: :func:`render_page` runs its steps for a page (the plugin events,
``Page.read_source`` and ``render``, ``get_context``, the theme's Jinja environment, kept by :class:`Capture` from the
last full build). A page's state after rendering travels between processes as :func:`rendered_state`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mkdocs.plugins import BasePlugin

if TYPE_CHECKING:
    import jinja2
    from mkdocs.structure.files import Files
    from mkdocs.structure.nav import Navigation

# What calling MkDocs' page API raises once a release renamed, removed or changed it.
API_CHANGED = (ImportError, AttributeError, TypeError)


def nav_entry(page) -> tuple:
    """What of a page every page's navigation shows, besides its URL: its title and metadata (Material's icons,
    status and subtitle)."""
    return page.title, repr(sorted(page.meta.items(), key=str))


def rendered_state(page) -> dict[str, Any]:
    """A page's state after render_page (its Markdown and metadata, then what rendering set), picklable."""
    from transformer_trace.site.parallel import page_state

    return {"markdown": page.markdown, "meta": page.meta, **page_state(page)}


def set_rendered_state(page, state: dict[str, Any], files) -> None:
    from transformer_trace.site.parallel import set_page_state

    page.markdown, page.meta = state["markdown"], state["meta"]
    set_page_state(page, state, files)


class Capture(BasePlugin):
    """A plugin that keeps the build's files, navigation and Jinja environment for later partial builds."""

    def __init__(self) -> None:
        self.files: Files | None = None
        self.nav: Navigation | None = None
        self.env: jinja2.Environment | None = None

    def captured(self) -> tuple[Files, Navigation, jinja2.Environment]:
        """The build's files, navigation and Jinja environment: a full build ran with this plugin."""
        if self.files is None or self.nav is None or self.env is None:
            raise RuntimeError("no full build has run with the Capture plugin yet")
        return self.files, self.nav, self.env

    def on_nav(self, nav, *, config, files):
        self.files, self.nav = files, nav
        return nav

    def on_env(self, env, *, config, files):
        self.env = env
        return env


mkdocs_log = logging.getLogger("mkdocs.commands.build")  # where `mkdocs build` reports a page it cannot build


def render_page(page, config, capture: Capture) -> None:
    """Read, convert and write one page as `mkdocs build` does (its steps for a page, in MkDocs' public API): the
    Markdown from ``page.file``, the HTML to its ``abs_dest_path``."""
    from mkdocs.commands import build as mkdocs_build
    from mkdocs.utils import write_file

    get_context = mkdocs_build.get_context
    (files, nav, env), plugins = capture.captured(), config.plugins
    config._current_page = page  # as `mkdocs build` sets it: the !relative YAML tag reads it
    try:
        page = plugins.on_pre_page(page, config=config, files=files)
        page.read_source(config)
        page.markdown = plugins.on_page_markdown(page.markdown, page=page, config=config, files=files)
        page.render(config, files)
        page.content = plugins.on_page_content(page.content, page=page, config=config, files=files)
        page.active = True  # the page the theme shows as the current one
        context = get_context(nav, files.documentation_pages(), config, page)
        template = env.get_template(page.meta.get("template", "main.html"))
        context = plugins.on_page_context(context, page=page, config=config, nav=nav)
        output = plugins.on_post_page(template.render(context), page=page, config=config)
        if output.strip():
            write_file(output.encode("utf-8", errors="xmlcharrefreplace"), page.file.abs_dest_path)
    except Exception as exc:
        mkdocs_log.error(f"Error building page '{page.file.src_uri}': {exc}")
        raise
    finally:
        page.active = False
        config._current_page = None


def render_with_entries(site: Any, page, search) -> list[dict]:
    """Render ``page`` (see render_page); the search entries it added (the index's other entries kept aside)."""
    saved = search.search_index.entries if search is not None else None
    entries: list[dict] = []
    if search is not None:
        search.search_index.entries = entries
    try:
        render_page(page, site.config, site._capture)
    finally:
        if search is not None:
            search.search_index.entries = saved
    return entries
