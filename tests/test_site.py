"""The built site: internal links and anchors resolve, the Pages workflow is valid, the notebook runs."""

from __future__ import annotations

import html.parser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from tests.conftest import ROOT


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag in ("img", "script") and attrs.get("src"):
            self.links.append(attrs["src"])
        if tag == "link" and attrs.get("href") and attrs.get("rel") in ("stylesheet", "icon"):
            self.links.append(attrs["href"])


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_every_internal_link_and_anchor_resolves(built_site):
    pages = sorted(built_site.rglob("*.html"))
    parsed = {page: _parse(page) for page in pages}
    broken = []
    for page, links in parsed.items():
        for href in links.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            if not parts.path:
                target = page
            elif parts.path.startswith("/"):  # absolute within the site (404.html)
                target = (built_site / unquote(parts.path).lstrip("/")).resolve()
            else:
                target = (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(built_site)}: {href}")
            elif parts.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(built_site)}: {href} (no anchor)")
    assert not broken, "\n".join(broken[:30])
    assert len(pages) > 75


def test_the_pages_workflow_builds_the_reports_and_deploys_a_project_site():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text(encoding="utf-8"))
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    steps = " ".join(str(step.get("run", "")) + str(step.get("uses", "")) for step in build["steps"])
    assert "mkdocs build --strict" in steps and "generator" not in steps  # the plugin generates the reports
    assert "TT_VIT_WEIGHTS" in build["env"] and "TT_VIT_WEIGHTS" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "actions/upload-pages-artifact" in steps and deploy["steps"][0]["uses"].startswith("actions/deploy-pages")
    assert workflow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert build["env"]["SITE_URL"].endswith("github.io/${{ github.event.repository.name }}/")
    assert "SITE_URL" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


@pytest.mark.parametrize("notebook", sorted((ROOT / "docs" / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_runs_without_errors_and_is_committed_with_outputs(notebook):
    committed = nbformat.read(notebook, as_version=4)
    assert any(cell.get("outputs") for cell in committed.cells if cell.cell_type == "code")
    fresh = nbformat.read(notebook, as_version=4)
    NotebookClient(fresh, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    errors = [o for cell in fresh.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"]
    assert not errors
