"""User text as data: what the generator keeps of a sentence, prompt or file name before anything shows it.

Control characters (C0, DEL, C1) would be written raw into Markdown, HTML and figures, and
bidirectional overrides (U+202A-U+202E, U+2066-U+2069) could visually reverse the rest of a table
cell. Both are removed; tabs and newlines become spaces. Pages say so where they show user text.

One path for every string that comes from the user or their script (file names, arguments, marker titles, dict keys,
exception messages, printed values): ``page_text`` cleans it and escapes every character Markdown or HTML reads (the
templates' `text` filter); ``fence_title`` makes it a code block's title; ``literal_block`` in generator/render.py
shows it verbatim in a fence.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Callable

_REMOVED = re.compile(
    "[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
# Every character Markdown or HTML gives a meaning to, written as a numeric entity (shown as itself).
_SPECIAL = re.compile(r"[\\`*_{}\[\]()#+\-.!|$<>&\"'~^=:%@]")
# Where a name may break across lines: after each of its separators (alice_nguyen, blocks.0.attn, my_vit.py:22).
_AFTER_SEPARATOR = re.compile(r"(?<=[_\-./@+: ])")


def clean_text(text: str) -> str:
    """``text`` with control and bidirectional-override characters removed, tabs and line breaks as spaces."""
    text = unicodedata.normalize("NFC", str(text)).replace("\t", " ").replace("\r", " ").replace("\n", " ")
    return _REMOVED.sub("", text)


def terminal_line(value: object) -> str:
    """User text for the terminal: one line, with no escape sequence or direction override to act on the terminal."""
    return clean_text(str(value))


def page_text(value: object) -> str:
    """User text for a page's Markdown or HTML: cleaned (one line, no control or direction characters), every
    character Markdown or HTML would read escaped. A table cell, heading or link text stays what it is."""
    return _SPECIAL.sub(lambda m: f"&#{ord(m.group())};", clean_text(str(value)))


def fence_title(value: object) -> str:
    """User text as a fenced code block's ``title="..."``: cleaned to one line, and the characters that would end the
    attribute or the fence's header (a quote, a backslash, a backtick) shown as '_' (the highlighter escapes the rest
    for HTML, and an entity would show as written)."""
    return re.sub(r'["\\`]', "_", clean_text(str(value)))


def removed_characters(text: str) -> list[str]:
    """The code points ``clean_text`` drops from ``text``, as U+XXXX, for messages and pages."""
    return sorted({f"U+{ord(ch):04X}" for ch in _REMOVED.findall(str(text))})


def shortened(text: str, most: int = 300) -> str:
    """``text`` cleaned (clean_text) and cut to ``most`` characters, an ellipsis where it was cut: an exception message
    or a printed value of the user's may be any length."""
    text = clean_text(text)
    return text if len(text) <= most else text[:most - 1] + "…"


def not_drawable(exc: BaseException) -> str:
    """Why a figure made for a model's own values was not drawn from the user's, for the page (plain text: the
    template escapes it)."""
    return shortened(f"could not be drawn from your values ({type(exc).__name__}: {exc})")


def escape_text(value: Any) -> str:
    """The templates' `text` filter and every page's user text: ``page_text``."""
    return page_text(value)


_CODE_SPAN = re.compile(r"`([^`]+)`")


def text_with_code(value: Any) -> str:
    """A message that quotes code in Markdown code spans (a check's diagnosis: "the projection with `p["proj"]`"), for
    a page where its Markdown is not read as such (a table cell made of escaped text): each span as <code>, everything
    else as ``page_text``; every part escaped."""
    parts = _CODE_SPAN.split(clean_text(str(value)))
    return "".join(f"<code>{page_text(part)}</code>" if i % 2 else page_text(part) for i, part in enumerate(parts))


def code(value: Any) -> str:
    """User text as inline code (a traced script's names and paths), escaped."""
    return f"<code>{page_text(value)}</code>"


def breakable(name: str, escape: Callable[[str], str]) -> str:
    """A name as HTML that a narrow table column breaks only after its separators (``scores_pre_mask`` ->
    ``scores_<wbr>pre_<wbr>mask``), each part escaped by ``escape``: with CSS that allows no other break (the report's
    ``code.tt-name``, the class page's cells), a name never splits inside a word. The one helper of both."""
    return "<wbr>".join(escape(part) for part in _AFTER_SEPARATOR.split(name) if part)


def name_code(value: Any) -> str:
    """A name of the user's (a variable, module or file:line of their script) as inline code that breaks only after
    its separators (``breakable``; tt-report.css keeps ``code.tt-name`` from breaking anywhere else), escaped."""
    return f'<code class="tt-name">{breakable(clean_text(str(value)), page_text)}</code>'
