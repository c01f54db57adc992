"""A student's notebook is data on its "Your notebook" page (issue 42): the copy a trace publishes keeps what a page
shows as data and makes text of everything a browser would run; the student's own file is never changed. The built
site is checked in a real browser in tests/test_hostile_names.py."""

from __future__ import annotations

import json

import pytest

from transformer_trace.cli import main
from transformer_trace.trace.published_notebook import SHOWN_OUTPUTS, TITLE, inert_markdown, published

ACTIVE_OUTPUTS = {
    "text/html": "<script>window.__pwned='html'</script><b>bold</b>",
    "application/javascript": "window.__pwned='js'",
    "text/markdown": "<img src=x onerror=\"window.__pwned='markdown'\">",
    "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'><script>window.__pwned='svg'</script></svg>",
    "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2, "version_minor": 0},
}
HOSTILE_MARKDOWN = ("# Title <img src=x onerror=\"window.__pwned='h1'\">\n\n<script>window.__pwned='md'</script>\n\n"
                    "[a](javascript:window.__pwned='link') [b](JavaScript:alert(1)) &#106;avascript\n\n"
                    "[c]: vbscript:msgbox\n\n```html\n<b>code stays code</b>\n```\n\n`<i>` and [web](https://x.org)")


def _notebook(outputs: list[dict], markdown: str = HOSTILE_MARKDOWN) -> dict:
    return {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": markdown},
        {"cell_type": "code", "metadata": {"tags": ["<img src=x onerror=\"window.__pwned='tag'\">"]},
         "execution_count": 1, "source": "x = 1", "outputs": outputs},
        {"cell_type": "raw", "metadata": {"format": "text/html"}, "source": "<script>window.__pwned='raw'</script>"}],
        "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {}}}, "nbformat": 4, "nbformat_minor": 5}


@pytest.mark.parametrize("kind, value", ACTIVE_OUTPUTS.items())
@pytest.mark.parametrize("output_type", ["display_data", "execute_result"])
def test_an_active_output_is_published_as_its_text(kind, value, output_type):
    output = {"output_type": output_type, "data": {kind: value}, "metadata": {kind: {"width": '1" onload="x'}}}
    shown = published(_notebook([output]))["cells"][2]["outputs"]
    assert len(shown) == 1 and set(shown[0]["data"]) == {"text/plain"} and shown[0]["metadata"] == {}
    assert "__pwned" in json.dumps(shown[0]["data"]["text/plain"]) or kind.endswith("widget-view+json")


def test_an_output_keeps_its_text_and_bitmaps_and_drops_its_active_kinds():
    data = {"text/plain": "<HTML object>", "image/png": "iVBOR", "text/html": "<script></script>",
            "application/javascript": "alert(1)"}
    shown = published(_notebook([{"output_type": "display_data", "data": data, "metadata": {}},
                                 {"output_type": "stream", "name": "stdout", "text": "<script>\n"},
                                 {"output_type": "unknown", "data": {"text/html": "<script>"}}]))
    outputs = shown["cells"][2]["outputs"]
    assert outputs[0]["data"] == {"text/plain": "<HTML object>", "image/png": "iVBOR"}
    assert outputs[1] == {"output_type": "stream", "name": "stdout", "text": "<script>\n"} and len(outputs) == 2
    assert set(SHOWN_OUTPUTS) >= set(outputs[0]["data"])


def test_markdown_raw_cells_widgets_and_the_title_are_made_data():
    shown = published(_notebook([]))
    assert shown["cells"][0] == {"cell_type": "markdown", "metadata": {}, "source": f"# {TITLE}"}
    markdown = shown["cells"][1]["source"]
    assert "<" not in markdown.replace("<b>code stays code</b>", "").replace("`<i>`", "")
    assert "](javascript:" not in markdown.lower() and "&#106;" not in markdown and "]: vbscript:" not in markdown
    assert "```html\n<b>code stays code</b>\n```" in markdown and "`<i>`" in markdown and "(https://x.org)" in markdown
    assert shown["cells"][2]["metadata"] == shown["cells"][3]["metadata"] == {} and "widgets" not in shown["metadata"]


@pytest.mark.parametrize("text", ["plain text", "a ~~~ b", "```\n<b>\n```", "x `a<b` y"])
def test_markdown_without_html_or_links_is_kept_as_it_was(text):
    assert inert_markdown(text) == text


def test_the_trace_publishes_the_made_safe_copy_and_leaves_the_students_notebook_as_it_was(tmp_path):
    notebook = tmp_path / "nb.ipynb"
    saved = _notebook([{"output_type": "display_data", "data": ACTIVE_OUTPUTS, "metadata": {}}])
    saved["cells"][1]["source"] = "import torch\nscores = torch.randn(1, 2, 5, 5)\nprobs = scores.softmax(dim=-1)  # BREAKPOINT S13"
    notebook.write_text(json.dumps(saved), encoding="utf-8")
    before = notebook.read_bytes()
    assert main(["trace", str(notebook), "--out", str(tmp_path / "out"), "--name", "nb", "-q"]) in (0, 1)
    assert notebook.read_bytes() == before
    copy = json.loads((tmp_path / "out" / "nb" / "notebooks" / "nb.ipynb").read_text(encoding="utf-8"))
    assert copy == published(saved)
