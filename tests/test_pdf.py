"""The report a student hands in: a print view per report, printed to PDF by headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from pypdf import PdfReader

from transformer_trace.reports import REPORTS
from transformer_trace.errors import UserError

if shutil.which("chromium") is None and os.environ.get("CI"):
    raise RuntimeError("CI needs Debian's chromium for the PDF tests: make test installs it (scripts/install-chromium.sh)")
pytestmark = pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")


@pytest.fixture(scope="module")
def pdfs(built_site, tmp_path_factory) -> dict[str, Path]:
    from transformer_trace.pdf import print_reports

    out = tmp_path_factory.mktemp("pdf")
    return {path.stem: path for path in print_reports(built_site, out, list(REPORTS))}


def _text(pdf: Path) -> str:
    """The PDF's text as a viewer's copy or search sees it: no Unicode normalisation, only whitespace folded."""
    return re.sub(r"\s+", " ", "\n".join(page.extract_text() for page in PdfReader(pdf).pages))


LIGATURES = re.compile("[\ufb00-\ufb06]")  # ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ


@pytest.mark.parametrize("key", REPORTS)
def test_pdf_text_is_plain_without_ligature_characters(pdfs, key):
    text = _text(pdfs[key])
    found = sorted(set(LIGATURES.findall(text)))
    assert not found, f"the PDF text holds ligature characters {found}: a copied 'first' would read 'ﬁrst'"
    assert "first" in text or "five" in text


def _embedded_fonts(pdf: Path) -> tuple[set[str], set[str]]:
    """Family names of the fonts the PDF embeds (subset prefixes like 'ABCDEF+' removed), and the characters
    drawn with unnamed Type 3 fonts (Chromium draws CJK glyphs of an OpenType collection that way)."""
    families, type3_text = set(), set()
    for page in PdfReader(pdf).pages:
        fonts = page.get("/Resources", {}).get_object().get("/Font", {})
        for font in fonts.values():
            font = font.get_object()
            base = str(font.get("/BaseFont", "")).lstrip("/").split("+")[-1]
            if base:
                families.add(base.split("-")[0].split(",")[0])
            elif "/ToUnicode" in font:
                cmap = font["/ToUnicode"].get_object().get_data().decode("latin-1")
                type3_text |= {chr(int(code, 16)) for code in re.findall(r"<[0-9A-F]{2}> <([0-9A-F]{4,})>", cmap)}
    return families, type3_text


def _is_cjk_or_symbol(ch: str) -> bool:
    """Glyphs only the print view's CJK fallback font (Noto CJK) draws, never the text font's."""
    return ord(ch) >= 0x2E80


@pytest.mark.parametrize("key", REPORTS)
def test_pdf_embeds_only_the_fonts_the_print_view_names(pdfs, key):
    from transformer_trace.pdf import PRINT_FONTS

    embedded, type3_text = _embedded_fonts(pdfs[key])
    unexpected = {f for f in embedded if not any(f.startswith(name) for name in PRINT_FONTS)}
    unexpected |= {f"Type 3 glyph {ch!r}" for ch in type3_text if not _is_cjk_or_symbol(ch)}
    packages = " ".join(sorted(set(PRINT_FONTS.values())))
    assert not unexpected, (f"the PDF embeds {sorted(unexpected)}, a fallback for a print font this machine lacks: "
                            f"install them with scripts/install-chromium.sh (apt-get install {packages})")
    assert {"DejaVuSans", "DejaVuSansMono"} <= embedded, f"the text and code fonts are missing from {sorted(embedded)}"


@pytest.mark.parametrize("key", REPORTS)
def test_pdf_has_every_snapshot_section_in_order(pdfs, key):
    text = _text(pdfs[key])
    position = 0
    for snap in REPORTS[key].snapshots:
        heading = f"{REPORTS[key].label(snap.number)} · {snap.title}"
        found = text.find(heading, position)
        assert found >= 0, f"{heading!r} missing or out of order"
        position = found + len(heading)
    assert "Guiding questions" in text[position:] and "Run stamp" in text[position:]


@pytest.mark.parametrize("key", REPORTS)
def test_every_figure_of_the_print_view_is_in_the_pdf(pdfs, built_site, key):
    html = (built_site / key / "print" / "index.html").read_text(encoding="utf-8")
    figures = re.findall(r'<img[^>]+src="(?:\.\./)*figures/([\w-]+)\.png"', html)
    reader = PdfReader(pdfs[key])
    images = sum(len(page.images) for page in reader.pages)
    assert len(figures) >= len(REPORTS[key].figures) - 1  # overview-only figures are not on snapshot pages
    assert images >= len(figures)
    text = _text(pdfs[key])
    for caption in {REPORTS[key].figure(f).caption[:40] for f in figures}:
        assert re.sub(r"\s+", " ", caption) in text


def test_pages_are_numbered(pdfs):
    reader = PdfReader(pdfs["vit"])
    total = len(reader.pages)
    assert f"page 1 of {total}" in reader.pages[0].extract_text()
    assert f"page {total} of {total}" in reader.pages[-1].extract_text()


def test_print_view_is_part_of_the_site_and_in_the_navigation(built_site):
    for key in REPORTS:
        assert (built_site / key / "print" / "index.html").exists()
    landing = (built_site / "encoder-decoder" / "index.html").read_text(encoding="utf-8")
    assert "Full report (print / PDF)" in landing


def test_a_missing_renderer_is_reported_in_one_line(monkeypatch):
    import transformer_trace.pdf

    monkeypatch.setattr(transformer_trace.pdf.shutil, "which", lambda name: None)
    with pytest.raises(UserError, match="PDF export needs a Chromium browser .* apt-get install chromium"):
        transformer_trace.pdf.find_chromium()


def test_a_pdf_stays_linked_while_its_report_is_unchanged_and_goes_when_it_changes(tmp_path):
    """Regenerating with the same inputs keeps the PDF (the report is byte-identical); new inputs drop it."""
    from transformer_trace.cli import main
    from transformer_trace.landing import PDF_INDEX, report_digest

    docs = tmp_path / "docs"
    assert main(["build", "--model", "encoder-decoder", "--out", str(docs), "-q"]) == 0
    (docs / "pdf").mkdir()
    (docs / "pdf" / "encoder-decoder.pdf").write_bytes(b"%PDF-1.7 stand-in")
    (docs / "pdf" / PDF_INDEX).write_text(json.dumps({"encoder-decoder": report_digest(docs / "encoder-decoder")}))
    assert main(["build", "--model", "encoder-decoder", "--out", str(docs), "-q"]) == 0
    assert (docs / "pdf" / "encoder-decoder.pdf").exists()
    assert "pdf/encoder-decoder.pdf" in (docs / "index.md").read_text(encoding="utf-8")
    assert main(["build", "--model", "encoder-decoder", "--src", "another sentence", "--out", str(docs), "-q"]) == 0
    assert not (docs / "pdf" / "encoder-decoder.pdf").exists()
    assert "pdf/encoder-decoder.pdf" not in (docs / "index.md").read_text(encoding="utf-8")
