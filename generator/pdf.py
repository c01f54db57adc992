"""PDF export of each report's print view, through a headless Chromium (print to PDF).

`python -m transformer_trace pdf` builds the site, prints every report's print view to
docs/pdf/<report>.pdf (and site/pdf/), and links the PDFs from the landing page. A traced script's report in the
docs folder (`python -m transformer_trace trace`) is printed the same way, to docs/pdf/<name>.pdf.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_trace.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
# The print view names these fonts (docs/stylesheets/extra.css) and scripts/install-chromium.sh installs their
# Debian packages, so a PDF embeds the same fonts, and so holds the same text, on every machine.
PRINT_FONTS = {
    "DejaVuSans": "fonts-dejavu-core", "DejaVuSansMono": "fonts-dejavu-core",
    "DejaVuMathTeXGyre": "fonts-dejavu-extra", "NotoSansCJK": "fonts-noto-cjk", "Symbola": "fonts-symbola",
}
FOOTER = ('<div style="font-size:8px;width:100%;text-align:center;color:#666;'
          'font-family:\'DejaVu Sans\',sans-serif;font-variant-ligatures:none;">'
          '{title} · page <span class="pageNumber"></span> of <span class="totalPages"></span></div>')


def find_chromium() -> str:
    for name in CHROMIUM_CANDIDATES:
        if path := shutil.which(name):
            return path
    raise UserError("PDF export needs a Chromium browser and none was found: install Debian's chromium "
                    "(sudo apt-get install chromium, or make browser), then run this again")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def print_reports(site: Path, out_dir: Path, reports: list[str]) -> list[Path]:
    """Print ``<site>/<report>/print/`` of each report to ``<out_dir>/<report>.pdf``."""
    executable = find_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise UserError("PDF export needs the playwright package: .venv/bin/pip install playwright (no browser "
                        "download needed)") from None
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with serve(site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            for key in reports:
                if not (site / key / "print" / "index.html").exists():
                    raise UserError(f"{site / key / 'print'} is missing; generate the report first (python -m "
                                    "generator build)")
                page.goto(f"{url}/{key}/print/", wait_until="load")
                page.evaluate("""async () => {
                    await Promise.all(Array.from(document.images).map(img => img.complete ? null :
                        new Promise(done => { img.onload = img.onerror = done; })));
                }""")
                title = page.locator("h1").first.inner_text().split(":")[0]
                target = out_dir / f"{key}.pdf"
                page.emulate_media(media="print")
                page.pdf(path=str(target), format="A4", print_background=True, display_header_footer=True,
                         header_template="<span></span>", footer_template=FOOTER.format(title=title),
                         margin={"top": "14mm", "bottom": "16mm", "left": "12mm", "right": "12mm"})
                written.append(target)
        finally:
            browser.close()
    return written


def traced_reports(docs: Path) -> list[str]:
    """The folders of ``docs`` that hold a traced script's report (`python -m transformer_trace trace`), by name: their
    print view is made by the same templates as a bundled report's, and printed the same way."""
    found = []
    for path in sorted(docs.glob("*/snapshots.json")):
        try:
            traced = json.loads(path.read_text(encoding="utf-8")).get("traced") is True
        except (OSError, ValueError, AttributeError):
            traced = False
        if traced:
            found.append(path.parent.name)
    return found


def export(docs: Path, config: Path, bundled: Mapping[str, Report], quiet: bool = False) -> list[Path]:
    """Build the site, print each generated report (of ``bundled``, the registry's reports, or traced) to PDF, and
    rebuild with the PDFs linked."""
    from transformer_trace.landing import PDF_INDEX, landing_entries, landing_is_ours, report_digest, write_landing
    from transformer_trace.docs_folder.staging import build_lock, claim

    reports = [*(key for key in bundled if (docs / key / "snapshots.json").exists()), *traced_reports(docs)]
    if not reports:
        raise UserError(f"no generated report in {docs}; run python -m transformer_trace build first")
    find_chromium()
    site = site_dir(config, docs)
    with build_lock(docs):  # it writes docs/pdf/ and docs/index.md: not while a build writes docs
        _mkdocs_build(config)
        written = print_reports(site, docs / "pdf", reports)
        (docs / "pdf" / PDF_INDEX).write_text(json.dumps({key: report_digest(docs / key) for key in reports}, indent=1,
                                                         sort_keys=True) + "\n", encoding="utf-8")
        claim(docs, "pdf", [*(path.name for path in written), PDF_INDEX])
        if landing_is_ours(docs):  # never the site's own home page
            write_landing(docs, landing_entries(docs, docs, set(), bundled), bundled)
            # rewritten here, outside a build: record it, or the next build takes it for a hand edit
            claim(docs, "index.md")
        _mkdocs_build(config)  # the landing page now links the PDFs, and site/pdf/ holds them
    if not quiet:
        for path in written:
            print(f"wrote {path}")
    return written


def site_dir(config: Path, docs: Path) -> Path:
    """The site folder ``config`` builds into, after checking that it builds ``docs`` (not some other docs folder)."""
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort, ConfigurationError

    if not config.is_file():
        raise UserError(f"MkDocs configuration not found: {config}; give one with --config")
    try:
        loaded = load_config(str(config))
    except (ConfigurationError, Abort) as exc:  # Abort: a value MkDocs refuses, e.g. a docs_dir that does not exist
        raise UserError(f"{config} is not a usable MkDocs configuration: {' '.join(str(exc).split())}") from None
    if Path(loaded["docs_dir"]).resolve() != docs.resolve():
        raise UserError(f"{config} builds {loaded['docs_dir']}, not {docs}: the PDFs would print another site; "
                        f"pass --config with a mkdocs.yml whose docs_dir is {docs}")
    return Path(loaded["site_dir"])


def _mkdocs_build(config: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)], capture_output=True,
                            text=True,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    if result.returncode:
        raise UserError("mkdocs build failed: "
                        f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else result.returncode}")

