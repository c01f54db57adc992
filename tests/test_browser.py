"""The site in a real browser: Debian's Chromium driven by Playwright, over HTTP, with no network beyond it.

Every generated page loads without console errors or failed requests, every image decodes, math is
rendered (no raw TeX), and the highlighted source lines carry the model file's real line numbers.
Screenshots land in test-artifacts/ for a person to look at.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_chromium

require_chromium()

from transformer_trace.reports import REPORTS  # noqa: E402

ARTIFACTS = ROOT / "test-artifacts"


def _generated_pages(site: Path) -> list[str]:
    pages = ["", "how-it-works/", "notebooks/record-a-forward-pass/"]
    for key in REPORTS:
        data = json.loads((site / key / "snapshots.json").read_text(encoding="utf-8"))
        pages += [f"{key}/", f"{key}/questions/"] + [f"{key}/{stage['key']}/" for stage in data["stages"]]
        pages += [f"{key}/{s['page'].removesuffix('.md')}/" for s in data["snapshots"]]
    return pages


def test_every_page_loads_cleanly_with_images_math_and_real_line_numbers(built_site, built_docs, server, browser):
    sources = {}
    for key in REPORTS:
        for s in json.loads((built_docs / key / "snapshots.json").read_text(encoding="utf-8"))["snapshots"]:
            sources[f"{key}/{s['page'].removesuffix('.md')}/"] = s["tensors"]
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    # A fetch cut off because the test navigates on (net::ERR_ABORTED) is not a site fault; any other failure is.
    page.on("requestfailed", lambda r: problems.append(f"request failed ({r.failure}): {r.url}") if r.failure != "net::ERR_ABORTED" else None)
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    math_pages = 0
    for path in _generated_pages(built_site):
        page.goto(f"{server}/{path}", wait_until="load")
        broken = page.evaluate("""async () => {
            await Promise.all(Array.from(document.images).map(img => {
                img.loading = 'eager';
                return img.complete ? null : new Promise(done => { img.onload = img.onerror = done; });
            }));
            return Array.from(document.images).filter(img => img.naturalWidth === 0).map(img => img.src);
        }""")
        assert not broken, f"{path}: images failed to load: {broken}"
        math = page.evaluate("""() => Array.from(document.querySelectorAll('.arithmatex')).map(el => [el.querySelector('math') !== null, el.innerText])""")
        assert all(has_mathml and "\\\\" not in text and "$$" not in text for has_mathml, text in math), f"{path}: raw TeX {math}"
        math_pages += bool(math)
        if path in sources:
            lines = page.evaluate("""() => Array.from(document.querySelectorAll('span.hll')).map(hll => {
                const span = hll.closest('span[id^="__span-"]');
                return [span.id, hll.innerText.replace(/\\n$/, '')];
            })""")
            assert len(lines) == len(sources[path]), f"{path}: expected one highlighted line per tensor"
            for (span_id, text), tensor in zip(lines, sources[path]):
                line = int(span_id.rsplit("-", 1)[1])
                assert line == tensor["source"]["line"], path
                assert text == (ROOT / tensor["source"]["path"]).read_text(encoding="utf-8").splitlines()[line - 1], path
    assert not problems, "\n".join(problems[:20])
    assert math_pages >= 5
    page.close()


def test_navigation_and_search_find_a_snapshot(built_site, server, browser):
    page = browser.new_page()
    page.goto(f"{server}/", wait_until="load")
    page.get_by_role("link", name="Encoder–decoder").first.click()
    page.wait_for_url("**/encoder-decoder/")
    page.get_by_role("link", name="#7 Self-attention queries (Q)").first.click()
    page.wait_for_url("**/07-self-attention-queries-q/")
    assert page.locator("h1").inner_text().startswith("#7")
    page.locator("a.md-footer__link--next").click()  # footer: next snapshot
    page.wait_for_url("**/08-self-attention-keys-k/")
    for query, expected in (("attn_probs", "13-attention-probabilities"),                      # variable name
                            ("Cross-attention keys", "31-cross-attention-keys-from-encoder"),  # title
                            ("S21", "21-encoder-block-2-output"),                             # ViT number
                            ("#26", "26-masked-attention-scores-after-mask-softmax")):        # encoder-decoder number
        page.locator("label.md-search__icon, .md-search__input").first.click()
        # The index is built in a web worker; on a loaded 2-core machine that takes a while. Wait until it is ready.
        page.wait_for_function("() => !/Initializing/i.test(document.querySelector('.md-search-result__meta')?.textContent || '')", timeout=60_000)
        box = page.locator("input.md-search__input")
        box.fill("")
        box.type(query, delay=30)  # real keystrokes, as a user types: Material's search reacts to key events
        result = page.locator(f"li.md-search-result__item a[href*='{expected}']").first
        result.wait_for(timeout=30_000)
        result.click()
        page.wait_for_url(f"**/{expected}/**")
    page.close()


@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_screenshots_of_landing_and_one_snapshot_per_report(built_site, server, browser, scheme):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme="dark" if scheme == "slate" else "light")
    for name, path in (("landing", ""), ("encoder-decoder-11", "encoder-decoder/encoder/11-attention-scores-after-softmax/"),
                       ("vit-13", "vit/block/13-attention-probabilities/")):
        page.goto(f"{server}/{path}", wait_until="load")
        assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == scheme
        # a key-value table (the snapshot's summary, the run stamp) draws no empty row of column titles
        assert page.evaluate("""() => Array.from(document.querySelectorAll('.md-typeset thead'))
            .filter(head => head.getClientRects().length && !head.innerText.trim()).length""") == 0, path
        page.screenshot(path=str(ARTIFACTS / f"{name}-{'dark' if scheme == 'slate' else 'light'}.png"))
    page.close()


def test_an_underlined_code_link_keeps_its_underscores_visible(built_site, server, browser):
    # "models/toy_vit.py:88" must not read "models/toy vit.py:88": the underline sits below the underscore's depth
    page = browser.new_page()
    page.goto(f"{server}/toy-vit/attention/13-attention-weights/", wait_until="load")
    offsets = page.evaluate("""() => Array.from(document.querySelectorAll('.md-typeset a'))
        .filter(a => a.children.length === 1 && a.firstElementChild.tagName === 'CODE' && a.textContent.includes('_'))
        .map(a => [a.textContent, parseFloat(getComputedStyle(a).textUnderlineOffset)
                                  / parseFloat(getComputedStyle(a.firstElementChild).fontSize)])""")
    assert offsets, "no code link with an underscore on the page"
    assert all(ratio >= 0.3 for _, ratio in offsets), offsets
    page.close()


def test_lightbox_opens_a_figure(built_site, server, browser):
    page = browser.new_page()
    page.goto(f"{server}/encoder-decoder/encoder/11-attention-scores-after-softmax/", wait_until="load")
    page.locator("a.glightbox").first.click()
    page.locator(".glightbox-container").wait_for(timeout=5_000)
    page.close()
