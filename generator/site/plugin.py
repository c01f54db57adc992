"""The `transformer-trace` MkDocs plugin: the reports mkdocs.yml declares, generated during the build.

```yaml
plugins:
  - transformer-trace:
      reports:
        gpt: {prompt: "The cat sat on the mat."}   # options: the CLI's, with underscores; paths relative to mkdocs.yml
```

- on_config generates each declared report that is missing, or whose options in mkdocs.yml or whose generator
  version changed since it was generated (generator/docs_folder/configured.py; recorded in docs/.generated.json). It
  writes into docs/<report>/ through the CLI's own staged, user-file-safe build (generator/docs_folder/staging.py). An
  up-to-date build imports nothing of PyTorch and writes nothing, so `mkdocs serve` does not rebuild in a loop. A bad
  option stops the build with the CLI's one-line message naming its mkdocs.yml key; docs/ is left as it was.
- It sets the navigation: the site's own `nav` (or, without one, its pages in MkDocs' default order) with one
  section per generated report, from each report's snapshots.json, after the home page.
- It serves the explorer's and the regenerate form's JavaScript and CSS from the package, and adds the Markdown
  extensions the report pages need (math, admonitions, tabs, highlighting, Material's icons) when the site lacks
  them. The pages are made for the Material theme: under another one the build says so in one warning and goes on
  (the pages read, plainer), rather than refusing a site that builds for a report that only looks different.
- on_page_content turns arithmatex's TeX spans into MathML at build time: math renders offline, without a CDN or
  script, and survives instant navigation (on the site's own pages only when the plugin added arithmatex: a site
  that configured it has its own renderer). It points a report page's explorer at its data for the site's URL
  style. on_post_page un-escapes Material's double-escaped footer aria-labels, and nothing else of a page.
"""

from __future__ import annotations

import html
import logging
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin
from mkdocs.structure.files import File, Files

from transformer_trace.docs_folder.configured import PLUGIN, declarations, stale
from transformer_trace.docs_folder.plugin_options import TransformerTraceConfig
from transformer_trace.site import highlight_cache
from transformer_trace.site.site_nav import generated_reports, navigation
from transformer_trace.template_cache import use_template_cache

log = logging.getLogger(f"mkdocs.plugins.{PLUGIN}")

ASSETS = Path(__file__).resolve().parent.parent / "assets"
ASSET_DIR = "assets/transformer-trace"  # where the site serves them
CSS = ("tt-report.css", "tt-regenerate.css")
JS = ("tt-explorer.js", "tt-regenerate.js")

# Markdown extensions the generated pages use, with the options they rely on (added when the site lacks them).
EXTENSIONS: dict[str, dict[str, Any]] = {
    "admonition": {}, "attr_list": {}, "md_in_html": {}, "tables": {}, "toc": {"permalink": True},
    "pymdownx.details": {}, "pymdownx.superfences": {}, "pymdownx.inlinehilite": {},
    "pymdownx.highlight": {"line_spans": "__span", "pygments_lang_class": True},
    "pymdownx.arithmatex": {"generic": True}, "pymdownx.tabbed": {"alternate_style": True},
}
EMOJI = "pymdownx.emoji"  # with Material's icon index (:material-check-circle:), whose options are Python objects


class TransformerTracePlugin(BasePlugin[TransformerTraceConfig]):
    supports_multiple_instances = False

    def __init__(self) -> None:
        self._user_nav: dict[int, Any] = {}  # id(config) -> the site's own nav (on_config may run again on one config)
        self._pages_helper_allowed = False  # `mkdocs build` (not serve, not --dirty): see generator/site/parallel.py
        self._pages_helper = None  # the HelperBuild of the build in progress
        self._math_on_every_page = True  # whether the plugin added arithmatex (else the site's own pages keep theirs)
        self._report_keys: set[str] = set()  # the docs/ folders that are generated reports
        self._live_server: Any = None  # `mkdocs serve`'s LiveReloadServer (on_serve), kept across its rebuilds

    # ------------------------------------------------------------------ generation

    def on_config(self, config):
        docs = Path(config.docs_dir)
        if self.config.generate:
            self.generate(docs, config.config_file_path)
        if id(config) not in self._user_nav:
            self._user_nav = {id(config): config.nav}
        added = [name for name in EXTENSIONS if name not in config.markdown_extensions]
        for name in added:
            config.markdown_extensions.append(name)
            config.mdx_configs[name] = dict(EXTENSIONS[name])
        if EMOJI not in config.markdown_extensions:  # the check cells' icons; inline SVG, so any theme shows them
            from material.extensions import emoji

            config.markdown_extensions.append(EMOJI)
            config.mdx_configs[EMOJI] = {"emoji_index": emoji.twemoji, "emoji_generator": emoji.to_svg}
        self._math_on_every_page = "pymdownx.arithmatex" in added  # the site's own math renderer otherwise
        _say_if_not_material(config)
        for name in CSS:
            if f"{ASSET_DIR}/{name}" not in [str(s) for s in config.extra_css]:
                config.extra_css.append(f"{ASSET_DIR}/{name}")
        for name in JS:
            if f"{ASSET_DIR}/{name}" not in [str(s) for s in config.extra_javascript]:
                config.extra_javascript.append(f"{ASSET_DIR}/{name}")
        return config

    def generate(self, docs: Path, config_file: str | None) -> list[str]:
        """Generate the declared reports that are missing or stale; the keys generated."""
        from transformer_trace.errors import UserError, file_error  # torch-free

        try:
            declared = declarations(self.config.reports, config_file)
        except UserError as exc:
            raise PluginError(str(exc)) from None
        todo = stale(docs, declared)
        if not todo:
            return []
        try:  # from here on PyTorch is imported: there is work to do
            if config_file:  # nothing is written through a link to outside the project (serve's own check)
                from transformer_trace.site.server import refuse_links_outside

                refuse_links_outside(docs, Path(config_file).parent)
            requests = _requests({key: self.config.reports[key] for key in todo}, config_file)  # refuses bad options
            for key, reason in todo.items():
                log.info("generating the %s report (%s)", key, reason)
            started = time.perf_counter()
            with _unwatched(self._live_server, docs):
                result = _generate(docs, requests, dict(self.config.reports), config_file)
        except UserError as exc:  # the CLI's one line, naming the report whose options in mkdocs.yml caused it
            raise PluginError(_naming_its_report(exc, list(todo), config_file)) from None
        except Exception as exc:  # a bug, not bad input: still one line
            if isinstance(exc, OSError) and (problem := file_error(exc)) is not None:  # a path the options gave
                raise PluginError(_naming_its_report(problem, list(todo), config_file)) from None
            raise PluginError(f"{PLUGIN}: internal error: {type(exc).__name__}: {exc}") from exc
        log.info("generated %s in %.1f s", ", ".join(todo), time.perf_counter() - started)
        for failure in result.failed_checks:
            log.warning("check failed: %s", failure)
        return list(todo)

    # ------------------------------------------------------------------ files and navigation

    def on_files(self, files: Files, *, config) -> Files:
        for name in (*CSS, *JS):
            if files.get_file_from_path(f"{ASSET_DIR}/{name}") is None:
                files.append(File.generated(config, f"{ASSET_DIR}/{name}", abs_src_path=str(ASSETS / name)))
        config.nav = self.site_nav(config, [f.src_uri for f in files.documentation_pages()])
        self._report_keys = {data["model"] for data in generated_reports(Path(config.docs_dir))}
        _refuse_pages_at_report_addresses(files, self._report_keys)
        return files

    def site_nav(self, config, pages: list[str] | None = None) -> list[Any] | None:
        """The navigation this plugin sets for ``config`` now (warm_site.py asks, to tell a changed one)."""
        return self.navigation(Path(config.docs_dir), self._user_nav.get(id(config), config.nav), pages)

    def navigation(self, docs: Path, user_nav: Any, pages: list[str] | None = None) -> list[Any] | None:
        """The site's navigation with one section per generated report, after the home page (site_nav.py)."""
        return navigation(docs, user_nav, pages)

    # ------------------------------------------------------------------ a second core for the pages (parallel.py)

    def on_startup(self, *, command, dirty):
        self._pages_helper_allowed = command in ("build", "gh-deploy") and not dirty
        highlight_cache.install()  # the same code highlighted once (highlight_cache.py), kept between processes
        highlight_cache.load()

    def on_nav(self, nav, *, config, files):
        from transformer_trace.site import parallel

        self._close_pages_helper()
        if self._pages_helper_allowed and parallel.enabled():
            self._pages_helper = parallel.HelperBuild.start(config, files)
        return nav

    def on_pre_page(self, page, *, config, files):
        if self._pages_helper is not None:
            self._pages_helper.on_pre_page(page)
        return page

    def on_post_build(self, *, config):
        self._close_pages_helper()
        highlight_cache.save()  # with what the helper highlighted, sent back with its pages

    def on_build_error(self, *, error):
        self._close_pages_helper()

    def _close_pages_helper(self) -> None:
        helper, self._pages_helper = self._pages_helper, None
        if helper is not None:
            helper.close()

    def on_env(self, env, *, config, files):  # the theme's templates kept compiled between builds, as the reports'
        return use_template_cache(env)

    # ------------------------------------------------------------------ pages

    def on_page_content(self, html_text: str, *, page, config, **_) -> str:
        """Report pages' math as MathML, data links for the URL style; the site's pages' math only if we added it."""
        ours = page.file.src_uri.split("/", 1)[0] in self._report_keys
        if ours and not config.use_directory_urls and Path(page.file.src_uri).stem not in ("index", "README"):
            html_text = _DATA_INDEX.sub(r"\1", html_text)  # a page's URL is its file's, not a folder one deeper
        return _MATH.sub(_to_mathml, html_text) if ours or self._math_on_every_page else html_text

    def on_post_page(self, output: str, **_) -> str:
        return _FOOTER_LABEL.sub(lambda m: m.group(1) + _DOUBLE_ESCAPED.sub(r"&\1;", m.group(2)) + '"', output)

    def on_serve(self, server, *, config, builder):
        """Rebuild (and regenerate) when a file a report's options name changes, as for mkdocs.yml itself."""
        self._live_server = server
        try:
            declared_reports = declarations(self.config.reports, config.config_file_path)
        except Exception:  # noqa: BLE001 - the build says what is wrong; nothing more to watch
            return server
        for declared in declared_reports.values():
            for name in declared["files"]:
                path = Path(declared["options"][name])
                if path.exists():
                    server.watch(str(path))
        return server


@contextmanager
def _unwatched(server: Any, docs: Path) -> Iterator[None]:
    """Under `mkdocs serve`, the build's own writes into docs/ hidden from its watcher: they are this build's input, so
    seen as changes they would build the site a second time. Watched again afterwards from a new snapshot of docs/."""
    path = os.path.abspath(docs)
    try:
        if server is not None:
            server.unwatch(path)
    except KeyError:  # not watched (`mkdocs serve --no-livereload`)
        server = None
    try:
        yield
    finally:
        if server is not None:
            server.watch(path)


def _requests(todo: dict[str, Any], config_file: str | None) -> dict[str, Any]:
    """Each report's options from mkdocs.yml, validated as the CLI validates them (imports PyTorch): one build request
    per report (generator/build_request.py), its values the declaration's."""
    from transformer_trace.build_request import BuildRequest, report_options
    from transformer_trace.errors import about_report
    from transformer_trace.reports import REPORTS

    config_path = Path(config_file) if config_file else None
    requests: dict[str, Any] = {}
    for key, options in todo.items():  # one line naming the mkdocs.yml key for a bad one
        with about_report(key):
            requests |= report_options(BuildRequest(model=key), REPORTS, {key: options or {}}, config_path)
    return requests


def _naming_its_report(exc, generating: list[str], config_file: str | None) -> str:
    """``exc``'s one line, after the mkdocs.yml key of the report whose input caused it, or of the plugin's reports with
    those being generated when no report's input did (a link, a folder), unless the message already names it."""
    from transformer_trace.build_request import config_key

    config_path = Path(config_file) if config_file else None
    message = str(exc)
    if message.startswith(config_key(config_path)):
        return message
    if exc.report is not None:
        return f"{config_key(config_path, exc.report)}: {message}"
    return f"{config_key(config_path)} (generating {', '.join(generating)}): {message}"


def _generate(docs: Path, requests: dict[str, Any], declared: dict[str, Any], config_file: str | None):
    """Run the generator for ``requests``, recording in the manifest what each report was generated from."""
    from transformer_trace.build import build
    from transformer_trace.build_request import run_records
    from transformer_trace.progress import Progress
    from transformer_trace.reports import REPORTS

    config_path = Path(config_file) if config_file else None
    return build(docs, requests, Progress(enabled=False), records=run_records(requests, declared, config_path),
                 reports=REPORTS)


# ---------------------------------------------------------------------- math and accessibility

# A snapshot page's explorer data, written relative to its URL under directory URLs (one folder deeper than its file).
_DATA_INDEX = re.compile(r'(data-index=")\.\./')
_MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)


def _to_mathml(match: re.Match) -> str:
    from latex2mathml.converter import convert

    tag, body = match.group(1), html.unescape(match.group(2)).strip()
    display = "block" if tag == "div" else "inline"
    tex = body[2:-2] if body[:2] in ("\\(", "\\[") else body
    return f'<{tag} class="arithmatex">{convert(tex.strip(), display=display)}</{tag}>'


# Accessibility: Material's footer escapes page titles that MkDocs already escaped, so its aria-label reads
# "Next: Input &amp; embedding" while the visible text is "Input & embedding" (WCAG 2.5.3). Only those links: a page's
# text never holds a raw "<a href=", so code that shows such an attribute is left as written.
_FOOTER_LABEL = re.compile(r'(<a href="[^"<>]*" class="md-footer__link[^"<>]*" aria-label=")([^"<>]*)"')
_DOUBLE_ESCAPED = re.compile(r"&amp;(amp|lt|gt|quot|#\d+|#x[0-9a-fA-F]+);")


def _refuse_pages_at_report_addresses(files: Files, reports: set[str]) -> None:
    """A page of the site's own that MkDocs would write where a report's page goes (docs/gpt.md is gpt/index.html, the
    GPT overview's address) replaces it or is replaced by it without a word: the build stops and names it."""
    generated = {f.dest_uri: f.src_uri.split("/", 1)[0] for f in files if f.src_uri.split("/", 1)[0] in reports}
    for file in files:
        report = generated.get(file.dest_uri)
        if report is not None and file.src_uri.split("/", 1)[0] != report:
            raise PluginError(f"{PLUGIN}: your {file.src_uri} would be written to {file.dest_uri}, where the {report} "
                              f"report's page goes; rename it")


def _say_if_not_material(config) -> None:
    """One line when the theme is not Material: the report pages build and read, but look plain (see README)."""
    theme = config.theme.name
    if theme != "material":
        log.warning("the report pages are made for the Material theme (theme: name: material); under %s they build, "
                    "but tabs, the explorer and the check icons look plain", repr(theme) if theme else "a custom theme")
