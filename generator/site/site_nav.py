"""The site's navigation with one section per generated report, from each report's snapshots.json.

Torch-free. Only the report folders this generator wrote count: a `snapshots.json` of the user's own (a list, a dict
of another shape, a folder whose name is not the report's) is left alone, neither read as a report nor a crash. A
section title the user's nav already has is not added twice: a nav that already lists the report's pages keeps its
own placement, and a different section of the same title makes the report's read "<title> report".
"""

from __future__ import annotations

import html
import json
import logging
from pathlib import Path
from typing import Any

from transformer_trace.docs_folder.configured import PLUGIN
from transformer_trace.text import clean_text

log = logging.getLogger(f"mkdocs.plugins.{PLUGIN}")

HOME_PAGES = ("index.md", "README.md")  # MkDocs serves either as a folder's index


def generated_reports(docs: Path) -> list[dict[str, Any]]:
    """snapshots.json of every generated report in docs/, in registry order (snapshots.json carries it)."""
    found = []
    for path in sorted(docs.glob("*/snapshots.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if is_report(data, path.parent.name):
            found.append(data)
    return sorted(found, key=lambda data: (data.get("order", 0), data["model"]))


def is_report(data: Any, folder: str) -> bool:
    """Whether ``data`` (snapshots.json in ``folder``) is one this generator wrote: the fields the navigation reads."""
    if not isinstance(data, dict) or data.get("model") != folder or not isinstance(data.get("title"), str):
        return False
    snapshots, stages = data.get("snapshots"), data.get("stages")
    extra = data.get("extra_pages", [])
    if not isinstance(snapshots, list) or not isinstance(stages, list) or not isinstance(data.get("order", 0), int):
        return False
    if not isinstance(extra, list) or not all(isinstance(e, dict) and {"title", "page"} <= e.keys() for e in extra):
        return False
    pages = {s.get("page") for s in snapshots if isinstance(s, dict) and {"page", "label", "title"} <= s.keys()}
    return len(pages) == len(snapshots) and all(
        isinstance(stage, dict) and isinstance(stage.get("title"), str) and isinstance(stage.get("index"), str)
        and isinstance(stage.get("pages"), list) and set(stage["pages"]) <= pages for stage in stages)


def report_nav(docs: Path, data: dict[str, Any]) -> list[Any]:
    key = data["model"]
    by_page = {s["page"]: s for s in data["snapshots"]}
    nav: list[Any] = [{"Overview": f"{key}/index.md"}]
    for stage in data["stages"]:
        entries: list[Any] = [f"{key}/{stage['index']}"]
        for page in stage["pages"]:
            snap = by_page[page]
            entries.append({f"{snap['label']} {snap['title']}": f"{key}/{page}"})
        nav.append({stage["title"]: entries})
    nav.append({"Guiding questions": f"{key}/questions.md"})
    for extra in data.get("extra_pages", []):
        nav.append({extra["title"]: f"{key}/{extra['page']}"})
    if (docs / key / "print.md").exists():
        nav.append({"Full report (print / PDF)": f"{key}/print.md"})
    return nav


def navigation(docs: Path, user_nav: Any, pages: list[str] | None = None) -> list[Any] | None:
    """The site's navigation with one section per generated report, after the home page."""
    generated = generated_reports(docs)
    keys = {data["model"] for data in generated}
    if user_nav is None:
        if pages is None:
            return None
        home = next((p for p in HOME_PAGES if p in pages), None)
        user_nav = default_nav([p for p in pages if p.split("/", 1)[0] not in keys and p != home])
        return ([{"Home": home}] if home else []) + _sections(docs, generated, user_nav) + user_nav
    nav = list(user_nav)
    at = 1 if nav and _target(nav[0]) in HOME_PAGES else 0
    return nav[:at] + _sections(docs, generated, nav) + nav[at:]


def _sections(docs: Path, generated: list[dict[str, Any]], user_nav: list[Any]) -> list[Any]:
    """One section per report, unless the user's nav already lists its pages; a title the nav has is not repeated."""
    titles, targets = _titles(user_nav), set(_targets(user_nav))
    sections = []
    for data in generated:
        key = data["model"]
        if any(str(target).startswith(f"{key}/") for target in targets):
            log.info("the nav lists the %s report's pages itself: its section is left where the nav puts it", key)
            continue
        title = data.get("short_title", data["title"])
        if title in titles:
            log.info("the nav already has a %r section: the %s report's is added as %r", title, key, f"{title} report")
            title = f"{title} report"
        sections.append({title: report_nav(docs, data)})
    return sections


def _titles(nav: list[Any]) -> set[str]:
    return {title for entry in nav if isinstance(entry, dict) for title in entry}


def _targets(nav: Any):
    """Every page (or link) a nav names, at any depth."""
    if isinstance(nav, list):
        for entry in nav:
            yield from _targets(entry)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from _targets(value)
    elif isinstance(nav, str):
        yield nav


def default_nav(pages: list[str]) -> list[Any]:
    """Pages as MkDocs lays them out without a `nav`: files before folders, a folder's index first, one section per
    folder, titled as MkDocs titles it but as text (``_title``: MkDocs writes a title into the page's HTML as it is)."""
    tree: dict[str, Any] = {}
    for page in pages:
        node = tree
        *folders, _name = page.split("/")
        for folder in folders:
            node = node.setdefault(folder + "/", {})
        node[page] = page

    def entries(node: dict[str, Any]) -> list[Any]:
        files = sorted((k for k in node if not k.endswith("/")),
                       key=lambda p: (Path(p).stem not in ("index", "README"), p))
        folders = sorted(k for k in node if k.endswith("/"))
        return [*files, *({_title(folder): entries(node[folder])} for folder in folders)]

    return entries(tree)


def _title(folder: str) -> str:
    """A folder's section title: its name (a student's folder may be named `<img src=x onerror=...>`) on one line,
    escaped for the HTML MkDocs writes it into."""
    name = folder.rstrip("/").rsplit("/", 1)[-1]
    return html.escape(clean_text(name.replace("-", " ").replace("_", " ").capitalize()))


def _target(entry: Any) -> Any:
    return next(iter(entry.values())) if isinstance(entry, dict) and len(entry) == 1 else entry
