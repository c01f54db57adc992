"""Highlighted code kept between pages (generator/site/highlight_cache.py) gives the HTML highlighting gives."""

from __future__ import annotations

import markdown
import pymdownx.highlight
import pytest

from transformer_trace.site import highlight_cache

PAGE = '''# Page

```python linenums="41" hl_lines="2"
def attention(q, k):
    return q @ k.T  # scores
```

``` { .python title="with a title" }
x = 1
```

Inline: `#!python print(1)`.
'''


def convert(text: str, **highlight_options) -> str:
    extensions = ["pymdownx.superfences", "pymdownx.highlight", "pymdownx.inlinehilite"]
    return markdown.Markdown(extensions=extensions, extension_configs={"pymdownx.highlight": highlight_options}).convert(text)


def test_the_same_code_is_highlighted_once_and_shows_what_highlighting_shows(monkeypatch):
    highlight_cache.install()
    monkeypatch.setenv("TT_PAGE_HELPER", "0")
    plain = {options: convert(PAGE, **dict(options)) for options in [(), (("line_spans", "__span"),)]}
    monkeypatch.setenv("TT_PAGE_HELPER", "1")
    calls = []
    real = pymdownx.highlight.highlight  # Pygments' highlight, as the extension calls it
    monkeypatch.setattr(pymdownx.highlight, "highlight", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert convert(PAGE) == plain[()]
    first = len(calls)
    assert convert(PAGE) == plain[()]
    assert len(calls) - first == 1  # the inline code again; the plain and the titled block not
    assert convert(PAGE, line_spans="__span") == plain[(("line_spans", "__span"),)]  # other options: highlighted anew
    assert len(calls) - first == 4


# The same blocks at other places on a page (a print view quotes every snapshot's code again): their line ids carry
# the block's number on the page, so the HTML must be numbered anew, not copied.
REORDERED = '# Print view\n\n' + PAGE.split("\n", 2)[2] + "\n## Again\n\n" + PAGE.split("\n", 2)[2]


@pytest.mark.parametrize("options", [{"line_spans": "__span"}, {"line_spans": "__span", "anchor_linenums": True},
                                     {"line_spans": "__span", "line_anchors": "__codelineno", "linenums": True}])
def test_a_block_at_another_number_on_its_page_gets_that_number_in_its_line_ids(monkeypatch, options):
    highlight_cache.install()
    monkeypatch.setenv("TT_PAGE_HELPER", "0")
    plain = convert(REORDERED, **options)
    assert f"{options['line_spans']}-3-" in plain  # the fourth block of the page is numbered so: the test can fail
    monkeypatch.setenv("TT_PAGE_HELPER", "1")
    calls = []
    real = pymdownx.highlight.highlight
    monkeypatch.setattr(pymdownx.highlight, "highlight", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert convert(PAGE, **options) == convert(PAGE, **options)  # both blocks kept
    before = len(calls)
    assert convert(REORDERED, **options) == plain
    assert len(calls) - before == 2  # only the two inline codes: the four blocks came from what was kept


def test_code_that_holds_the_sentinel_number_is_highlighted_as_it_is(monkeypatch):
    highlight_cache.install()
    page = f"```python\nx = '__span-{highlight_cache.SENTINEL}-1'\n```\n"
    monkeypatch.setenv("TT_PAGE_HELPER", "0")
    plain = convert(page, line_spans="__span")
    monkeypatch.setenv("TT_PAGE_HELPER", "1")
    assert convert(page, line_spans="__span") == plain == convert(page, line_spans="__span")


@pytest.mark.parametrize("stored", ["kept", "unreadable", "absent"])
def test_a_new_process_takes_the_blocks_a_past_one_saved_and_never_a_broken_file(monkeypatch, tmp_path, stored):
    from collections import OrderedDict

    highlight_cache.install()
    monkeypatch.setenv("TT_PAGE_HELPER", "1")
    monkeypatch.setenv("TT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(highlight_cache, "_cache", OrderedDict())
    monkeypatch.setattr(highlight_cache, "_stored", None)
    highlight_cache.load()  # nothing there yet
    first = convert(PAGE, line_spans="__span")
    highlight_cache.save()
    path = highlight_cache.store_path()
    assert path.is_file() and path.is_relative_to(tmp_path)
    if stored == "unreadable":
        path.write_text('{"not": "a list of blocks"', encoding="utf-8")
    elif stored == "absent":
        path.unlink()
    monkeypatch.setattr(highlight_cache, "_cache", OrderedDict())  # as in a new process
    highlight_cache.load()
    calls = []
    real = pymdownx.highlight.highlight
    monkeypatch.setattr(pymdownx.highlight, "highlight", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert convert(PAGE, line_spans="__span") == first
    assert len(calls) == (1 if stored == "kept" else 3)  # kept: only the inline code, never kept
