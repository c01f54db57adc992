"""The copy of a student's notebook that a trace publishes as its "Your notebook" page: the notebook as it was saved,
with everything a browser would run made text (the student's own file is never changed).

mkdocs-jupyter (configured as the project's mkdocs.yml configures it) writes a saved output's HTML, JavaScript,
Markdown and SVG into the page as they are, a markdown cell's raw HTML and link addresses too, and a raw cell marked
text/html: on a class site they would run in the teacher's browser. Here an output keeps only the kinds a page shows as
data (``SHOWN_OUTPUTS``: text, escaped by nbconvert, and bitmaps, shown as an image); one that had only active kinds
shows its source as text. A cell's metadata (its tags, a raw cell's format) is dropped. A markdown cell's ``<`` and
``&`` are written as text outside its code, and a link to any address but a web, mail or relative one goes nowhere.
The page's title is ours (``TITLE``, a first cell): mkdocs-jupyter takes it from the first heading, and Material writes
a title into `<title>` unescaped (`# </title><img ...>` would run)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

SHOWN_OUTPUTS = ("text/plain", "image/png", "image/jpeg", "image/gif")
SHOWN_ATTACHMENTS = ("image/png", "image/jpeg", "image/gif")
SAFE_SCHEMES = ("http", "https", "mailto")
TITLE = "Your notebook"  # as the report's navigation names the page
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
# a link's address: "[text](address" or a reference's "[name]: address"
_LINK_ADDRESS = re.compile(r"(\]\(\s*|^\s{0,3}\[[^\]]*\]:\s*)([A-Za-z][A-Za-z0-9+.\-]*):")


def published(notebook: dict[str, Any]) -> dict[str, Any]:
    """The notebook (its JSON) with every output, markdown cell and raw cell made data (see the module's docstring)."""
    shown = copy.deepcopy(notebook)
    if isinstance(shown.get("metadata"), dict):
        shown["metadata"].pop("widgets", None)  # the widgets' state: a script the page would load
    shown["cells"] = [{"cell_type": "markdown", "metadata": {}, "source": f"# {TITLE}"}, *shown.get("cells", [])]
    for cell in shown["cells"]:
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        cell["metadata"] = {}  # its tags are written into the page unescaped; a raw cell's format makes it HTML
        if kind == "code":
            cell["outputs"] = [out for out in map(_output, cell.get("outputs") or []) if out is not None]
        elif kind == "markdown":
            cell["source"] = inert_markdown(_text(cell.get("source", "")))
        if isinstance(cell.get("attachments"), dict):
            cell["attachments"] = {name: {k: v for k, v in data.items() if k in SHOWN_ATTACHMENTS}
                                   for name, data in cell["attachments"].items() if isinstance(data, dict)}
    return shown


def _output(output: object) -> dict[str, object] | None:
    """An output as data: a stream's or an error's text as it is (nbconvert escapes it), a result's shown kinds only,
    its active kinds' source as text where nothing else is left; None for any other."""
    if not isinstance(output, dict):
        return None
    kind = output.get("output_type")
    if kind == "stream":
        return {"output_type": kind, "name": str(output.get("name", "stdout")), "text": _text(output.get("text", ""))}
    if kind == "error":
        return {"output_type": kind, "ename": str(output.get("ename", "")), "evalue": str(output.get("evalue", "")),
                "traceback": [str(line) for line in output.get("traceback") or []]}
    if kind not in ("display_data", "execute_result") or not isinstance(output.get("data"), dict):
        return None
    data = {key: value for key, value in output["data"].items() if key in SHOWN_OUTPUTS}
    active = [key for key in output["data"] if key not in SHOWN_OUTPUTS]
    if active and "text/plain" not in data:
        value = output["data"][active[0]]
        data["text/plain"] = value if isinstance(value, (str, list)) else json.dumps(value, indent=1)
    kept = {"output_type": kind, "data": data, "metadata": {}}  # metadata: sizes nbconvert would write unescaped
    if kind == "execute_result":
        kept["execution_count"] = output.get("execution_count")
    return kept


def inert_markdown(text: str) -> str:
    """Markdown with no HTML and no link a browser would run: ``<`` and ``&`` as text outside code blocks and code
    spans, a link to an address of another scheme than ``SAFE_SCHEMES`` made relative (it leads nowhere)."""
    lines, fence = [], None
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            lines.append(line)
        elif opened:
            fence = opened.group(1)
            lines.append(line)
        else:
            lines.append(_inert_line(line))
    return "\n".join(lines)


def _inert_line(line: str) -> str:
    parts, at = [], 0
    for span in _CODE_SPAN.finditer(line):
        parts += [_escaped(line[at:span.start()]), span.group()]
        at = span.end()
    return "".join([*parts, _escaped(line[at:])])


def _escaped(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    return _LINK_ADDRESS.sub(
        lambda m: m.group() if m.group(2).lower() in SAFE_SCHEMES else f"{m.group(1)}#{m.group(2)}-", text)


def _text(value: object) -> str:
    return "".join(map(str, value)) if isinstance(value, list) else str(value)
