"""WCAG 2.2 A/AA in a real browser: axe-core (tests/vendor/axe-core) on the built site, light and dark.

The pages are checked as a reader uses them: the attention explorer drawn, a value browser open and
a heat map's table shown, so the interactive parts are audited too. Serious and critical findings fail.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT, require_chromium

AXE = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
PAGES = [
    "",
    "encoder-decoder/",
    "encoder-decoder/questions/",
    "encoder-decoder/input/01-raw-input-tokens-ids/",
    "encoder-decoder/encoder/07-self-attention-queries-q/",
    "encoder-decoder/encoder/11-attention-scores-after-softmax/",
    "encoder-decoder/decoder/26-masked-attention-scores-after-mask-softmax/",
    "encoder-decoder/decoder/34-cross-attention-score-matrix-after-softmax/",
    "vit/",
    "vit/questions/",
    "vit/input/01-raw-input-tensor-after-preprocessing/",
    "vit/block/13-attention-probabilities/",
    "vit/output/26-softmax-probabilities/",
]

require_chromium()


def test_the_vendored_axe_core_is_the_version_its_readme_names():
    version = re.search(r"axe-core (\d+\.\d+\.\d+)", (AXE.parent / "README.md").read_text(encoding="utf-8")).group(1)
    assert AXE.read_text(encoding="utf-8").startswith(f"/*! axe v{version}")
    assert "Mozilla Public" in (AXE.parent / "LICENSE").read_text(encoding="utf-8")


def _open_the_interactive_parts(page) -> None:
    if page.locator(".tt-explorer").count():
        explorer = page.locator(".tt-explorer").first
        explorer.scroll_into_view_if_needed()
        explorer.locator(".tt-view canvas.tt-canvas").first.wait_for(timeout=30_000)
        explorer.locator(".tt-view .tt-button").first.click()  # a heat map's table
        explorer.locator("table.tt-matrix").first.wait_for(timeout=30_000)
    if page.locator(".tt-values-box").count():
        page.locator(".tt-values-box summary").first.click()
        page.locator(".tt-values table.tt-matrix").first.wait_for(timeout=30_000)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_or_critical_wcag_22_aa_violation(server, browser, scheme):
    page = browser.new_page(color_scheme=scheme, viewport={"width": 1280, "height": 900})
    failures = []
    for path in PAGES:
        page.goto(f"{server}/{path}", wait_until="load")
        assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == ("slate" if scheme == "dark" else "default")
        _open_the_interactive_parts(page)
        page.add_script_tag(path=str(AXE))
        violations = page.evaluate("""async tags => {
            const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
            return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary.replace(/\\s+/g, ' '))}));
        }""", TAGS)
        for v in violations:
            if v["impact"] in ("serious", "critical"):
                failures.append(f"/{path} {v['id']} ({v['impact']}, {len(v['nodes'])} elements): {v['help']}\n    " + "\n    ".join(v["nodes"][:3]))
    page.close()
    assert not failures, f"{scheme} scheme:\n" + "\n".join(failures)
