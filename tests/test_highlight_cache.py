"""Highlighted code kept between pages (generator/site/highlight_cache.py) gives the HTML highlighting gives."""

from __future__ import annotations

import markdown
import pymdownx.highlight

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
    assert len(calls) - first == 2  # the titled block and the inline code again; the plain block not
    assert convert(PAGE, line_spans="__span") == plain[(("line_spans", "__span"),)]  # other options: highlighted anew
    assert len(calls) - first == 5
