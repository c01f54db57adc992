"""`transformer-trace new DIR`, as `mkdocs new DIR`: a folder with a mkdocs.yml (Material, search and this plugin
with one report: the toy ViT, the quickest to generate) and a docs/index.md, so that `cd DIR && mkdocs serve` shows a
report. The files' templates are in new_site/ (package data). Torch-free.

The folder's name is the site's title: plain Markdown text in docs/index.md (escaped only where Markdown or HTML would
read it), quoted YAML in mkdocs.yml. A name no site could carry (empty, not UTF-8, a control character, a Unicode
non-character) is refused before anything is written, and a write that fails takes back what it wrote.
"""

from __future__ import annotations

import argparse
import json
import re
import unicodedata
from pathlib import Path

from transformer_trace.errors import UserError
from transformer_trace.text import clean_text

TEMPLATES = Path(__file__).resolve().parent / "new_site"
# template -> the file it becomes in the new folder
FILES = {"mkdocs.yml.j2": "mkdocs.yml", "index.md.j2": "docs/index.md", "gitignore.j2": ".gitignore"}


def _site_name(title: str) -> str:
    """The folder's name as mkdocs.yml's site_name: one line, and with the characters that would make it HTML as
    entities, since MkDocs themes write site_name into their pages unescaped (Material's aria-label, readthedocs' home
    link)."""
    return re.sub('[<>"]', lambda m: f"&#{ord(m.group())};", clean_text(title))


def markdown_text(text: str) -> str:
    """``text`` as Markdown that shows it as written, on one line: a backslash before what Markdown would read as
    syntax (``*``, `` ` ``, ``[``, ``]``, ``{``, ``}``, a ``\\``, an ``_`` that could open or close emphasis, a
    heading's closing ``#``), an entity only where Markdown cannot escape HTML (a ``<`` that would open a tag, an
    ``&`` that would start an entity). ``my-site`` stays ``my-site``."""
    text = clean_text(text)
    text = re.sub(r"&(?=#?\w+;)", "&amp;", text)
    text = re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text)
    text = re.sub(r"[\\`*\[\]{}]", lambda m: "\\" + m.group(), text)
    text = re.sub(r"(?<!\w)_|_(?!\w)", r"\\_", text)
    return re.sub(r"#+\s*$", lambda m: m.group().replace("#", "\\#"), text)


def _noncharacter(character: str) -> bool:
    point = ord(character)
    return 0xFDD0 <= point <= 0xFDEF or point & 0xFFFE == 0xFFFE


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a new site's folder (None when it can): what MkDocs could not read back as its
    site_name, or a terminal and a page could not show as typed."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"the name is not valid UTF-8 (character {exc.start + 1} is an undecodable byte); name the folder "
                "in UTF-8")
    for position, character in enumerate(name, start=1):
        if unicodedata.category(character) == "Cc":
            return f"the name holds a control character (U+{ord(character):04X}, character {position}); choose another"
        if _noncharacter(character):
            return (f"the name holds U+{ord(character):04X} (character {position}), a Unicode non-character no text "
                    "may carry; choose another")
    return None


def folder_argument(text: str) -> Path:
    """`new DIR`'s DIR, refused in one line when no site could be made of it (an empty name: Path('') is '.')."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected the name of the folder to create, not an empty one "
                                         "(for the current folder, give .)")
    problem = name_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return Path(text)


def new_site(folder: Path) -> list[Path]:
    """Write the starter site into ``folder`` (created); the files written. Refuses a name no site could carry, a
    folder that exists and is not empty, or a path that is a file, before writing anything."""
    import jinja2

    if (problem := name_problem(str(folder))) is not None:
        raise UserError(problem)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder}: is a file; name a new folder")
    if folder.is_dir() and any(folder.iterdir()):
        raise UserError(f"{folder}: the folder is not empty; name a new or empty folder")
    title = folder.resolve().name or "Transformer reports"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False)
    values = {"site_name_yaml": json.dumps(_site_name(title), ensure_ascii=False),
              "title_markdown": markdown_text(title)}
    texts = {folder / name: env.get_template(template).render(values) for template, name in FILES.items()}
    made = [path for path in (folder, folder / "docs") if not path.exists()]
    try:
        for path, text in texts.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError:  # nothing half-written stays: the files, then the folders this call made
        for path in texts:
            path.unlink(missing_ok=True)
        for path in reversed(made):
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        raise
    return list(texts)
