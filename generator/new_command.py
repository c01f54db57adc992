"""`transformer-trace new DIR`, as `mkdocs new DIR`: a folder with a mkdocs.yml (Material, search and this plugin
with one report: the toy ViT, the quickest to generate) and a docs/index.md, so that `cd DIR && mkdocs serve` shows a
report. The files' templates are in new_site/ (package data). Torch-free.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jinja2

from transformer_trace.errors import UserError
from transformer_trace.text import clean_text, page_text

TEMPLATES = Path(__file__).resolve().parent / "new_site"
# template -> the file it becomes in the new folder
FILES = {"mkdocs.yml.j2": "mkdocs.yml", "index.md.j2": "docs/index.md", "gitignore.j2": ".gitignore"}


def _site_name(title: str) -> str:
    """The folder's name as mkdocs.yml's site_name: one line, and with the characters that would make it HTML as
    entities, since MkDocs themes write site_name into their pages unescaped (Material's aria-label, readthedocs' home
    link)."""
    return re.sub('[<>"]', lambda m: f"&#{ord(m.group())};", clean_text(title))


def new_site(folder: Path) -> list[Path]:
    """Write the starter site into ``folder`` (created); the files written. Refuses a folder that exists and is not
    empty, or a path that is a file, before writing anything."""
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder}: is a file; name a new folder")
    if folder.is_dir() and any(folder.iterdir()):
        raise UserError(f"{folder}: the folder is not empty; name a new or empty folder")
    title = folder.resolve().name or "Transformer reports"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False)
    values = {"site_name_yaml": json.dumps(_site_name(title), ensure_ascii=False), "title_markdown": page_text(title)}
    written = []
    for template, name in FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(env.get_template(template).render(values), encoding="utf-8")
        written.append(path)
    return written
