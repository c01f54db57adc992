"""MkDocs hooks (mkdocs.yml: hooks): navigation from the generated reports, math as MathML.

- on_config builds the navigation from each generated report's snapshots.json, so the
  nav always lists exactly the pages that exist, in catalogue order, grouped by stage, and
  the reports in registry order (snapshots.json carries it: MkDocs need not import torch).
- on_page_content turns arithmatex's TeX spans into MathML at build time: math renders
  offline, without a CDN or script, and survives instant navigation.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from latex2mathml.converter import convert

def generated_reports(docs: Path) -> list[dict[str, Any]]:
    """snapshots.json of every generated report in docs/, in registry order."""
    found = []
    for path in sorted(docs.glob("*/snapshots.json")):
        try:
            found.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return sorted(found, key=lambda data: (data.get("order", 0), data["model"]))


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


def on_config(config, **_):
    docs = Path(config["docs_dir"])
    nav: list[Any] = [{"Home": "index.md"}]
    for data in generated_reports(docs):
        nav.append({data.get("short_title", data["title"]): report_nav(docs, data)})
    extra = config.get("extra", {}).get("handwritten_nav", [])
    nav.extend(entry for entry in extra if (docs / next(iter(entry.values()))).exists())
    config["nav"] = nav
    return config


_MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)


def _to_mathml(match: re.Match) -> str:
    tag, body = match.group(1), html.unescape(match.group(2)).strip()
    display = "block" if tag == "div" else "inline"
    tex = body[2:-2] if body[:2] in ("\\(", "\\[") else body
    return f'<{tag} class="arithmatex">{convert(tex.strip(), display=display)}</{tag}>'


def on_page_content(content: str, **_) -> str:
    return _MATH.sub(_to_mathml, content)


# Accessibility: Material escapes page titles that MkDocs already escaped, so the footer's aria-label
# reads "Next: Input &amp; embedding" while the visible text is "Input & embedding" (WCAG 2.5.3).
_ARIA_LABEL = re.compile(r'aria-label="([^"]*)"')
_DOUBLE_ESCAPED = re.compile(r"&amp;(amp|lt|gt|quot|#\d+|#x[0-9a-fA-F]+);")


def on_post_page(output: str, **_) -> str:
    return _ARIA_LABEL.sub(lambda m: 'aria-label="' + _DOUBLE_ESCAPED.sub(r"&\1;", m.group(1)) + '"', output)
