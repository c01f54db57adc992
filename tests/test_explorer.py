"""Explore the run: every layer, every head, every number, offline.

The data files (<report>/data/*.npy + index.json) are checked with NumPy; the attention explorer
and the value browser (generator/assets/tt-explorer.js) are driven in Debian's Chromium and the
numbers they show are compared with a fresh forward pass that records every layer.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest
import torch

from transformer_trace.reports import REPORTS
from transformer_trace.render import build_pages
from transformer_trace.tensor_data import UnlabelledAxis, axis_labels, exploration_names, run_labels, write_run_data, write_tensor_data
from transformer_trace.models.recording import recording
from tests.conftest import ROOT, require_chromium

SITE_LIMIT = 80 * 1024 * 1024  # bytes, the whole built site with the default inputs
ED_11 = "encoder-decoder/encoder/11-attention-scores-after-softmax/"
ED_26 = "encoder-decoder/decoder/26-masked-attention-scores-after-mask-softmax/"
ED_07 = "encoder-decoder/encoder/07-self-attention-queries-q/"
VIT_13 = "vit/block/13-attention-probabilities/"
TOY_VIT_13 = "toy-vit/attention/13-attention-weights/"
GPT_14 = "gpt/block/14-attention-probabilities-causal-softmax/"
VIT_17 = "vit/block/17-ffn-hidden-after-fc1-gelu/"


# ----------------------------------------------------------------------------- fresh runs, every layer recorded


@pytest.fixture(scope="module")
def ed_all_layers() -> dict[str, torch.Tensor]:
    """The default encoder–decoder rebuilt from scratch (not through the generator), every tensor recorded."""
    from transformer_trace.reports.encoder_decoder.options import DEFAULT_SRC, DEFAULT_TGT
    from transformer_trace.models.encoder_decoder import EncoderDecoderConfig, EncoderDecoderTransformer, build_vocab, encode

    src_vocab, tgt_vocab = build_vocab(DEFAULT_SRC), build_vocab(DEFAULT_TGT)
    torch.manual_seed(7)
    model = EncoderDecoderTransformer(EncoderDecoderConfig(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab))).eval()
    with torch.no_grad(), recording() as rec:
        model(torch.tensor([encode(DEFAULT_SRC, src_vocab)]), torch.tensor([encode(DEFAULT_TGT, tgt_vocab)]))
    return {name: r.tensor for name, r in rec.items()}


@pytest.fixture(scope="module")
def vit_block12_probs() -> torch.Tensor:
    """Block 12's attention of the default ViT-B/16 (seed 7, bundled image), from a fresh forward pass."""
    from transformer_trace.reports.vit.images import DEFAULT_IMAGE, load_rgb, preprocess
    from transformer_trace.reports.vit.weights import IMAGENET_MEAN, IMAGENET_STD
    from transformer_trace.models.vit import PRESETS, VisionTransformer

    torch.manual_seed(7)
    model = VisionTransformer(PRESETS["b16"]).eval()
    image = preprocess(load_rgb(DEFAULT_IMAGE)[0], 224, IMAGENET_MEAN, IMAGENET_STD)
    with torch.no_grad(), recording(keep={"blocks.11.attn.probs"}) as rec:
        model(image)
    return rec.tensor("blocks.11.attn.probs")


# ----------------------------------------------------------------------------- the data, without a browser


@pytest.mark.parametrize("key", REPORTS)
def test_index_lists_files_numpy_loads_with_the_right_shapes_dtypes_and_labels(built_docs, key):
    report_dir = built_docs / key
    index = json.loads((report_dir / "data" / "index.json").read_text(encoding="utf-8"))
    snapshots = json.loads((report_dir / "snapshots.json").read_text(encoding="utf-8"))
    entries = {t["name"]: t for t in index["tensors"]}
    assert [t["name"] for t in index["tensors"]] == sorted(entries), "tensors are listed sorted by name"
    for entry in index["tensors"]:
        assert entry["file"] == f"data/{entry['name']}.npy"
        array = np.load(report_dir / entry["file"], allow_pickle=False)
        assert list(array.shape) == entry["shape"], entry["name"]
        assert array.dtype.str == entry["dtype"] and entry["dtype"] in ("<f4", "<i8", "|b1"), entry["name"]
        assert len(entry["labels"]) == array.ndim
        for axis, label in enumerate(entry["labels"]):
            assert label is None or len(index["labels"][label]) == array.shape[axis], (entry["name"], axis, label)
    # Every tensor a page shows, whole: the page's shape, or larger where the page shows a slice of it.
    for snap in snapshots["snapshots"]:
        for i, tensor in enumerate(snap["tensors"]):
            whole = entries[tensor["name"]]["shape"]
            assert whole == tensor["shape"] or (i == 0 and np.prod(tensor["shape"]) <= np.prod(whole)), tensor["name"]
    # Every layer's attention and residual-stream output.
    report = REPORTS[key]
    explored = exploration_names(report, report.options().config())
    assert set(explored) <= set(entries) and any(n.endswith(".output") for n in explored)
    assert [g["key"] for g in index["attention"]] == [g.key for g in report.exploration.groups]
    for group in index["attention"]:
        assert group["layers"] == [n for n in explored if re.fullmatch(next(g.pattern for g in report.exploration.groups if g.key == group["key"]), n)]
        for name in group["layers"]:
            probs = np.load(report_dir / entries[name]["file"])
            assert probs.shape[2] == len(index["labels"][group["rows"]]) and probs.shape[3] == len(index["labels"][group["cols"]])
            np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    if key == "vit":
        assert index["labels"]["tokens"][:3] == ["[CLS]", "r0c0", "r0c1"] and len(index["labels"]["tokens"]) == 197
        image = index["attention"][0]["image"]
        assert image == {"file": "data/input.png", "grid": 14, "cls": True}
        from PIL import Image

        with Image.open(report_dir / image["file"]) as png:
            assert png.size == (224, 224) and png.mode == "RGB"
    elif key == "encoder-decoder":
        assert index["labels"]["src_tokens"] == "hello from cairo egypt team project".split()
        assert index["labels"]["tgt_tokens"] == "we are debugging transformer today".split()


def test_data_equals_the_run_and_is_byte_identical_across_runs(built_docs, ed_run, ed_all_layers, tmp_path):
    pages = build_pages(REPORTS["encoder-decoder"], ed_run)
    for out in (tmp_path / "a", tmp_path / "b"):
        write_run_data(REPORTS["encoder-decoder"], ed_run, pages, out)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    # The CLI build of the same inputs wrote the same bytes.
    built = built_docs / "encoder-decoder"
    assert all((built / f).read_bytes() == (tmp_path / "a" / f).read_bytes() for f in files)
    for name in exploration_names(REPORTS["encoder-decoder"], ed_run.inputs["config"]):
        np.testing.assert_array_equal(np.load(built / "data" / f"{name}.npy"), ed_all_layers[name].numpy())


@pytest.mark.parametrize("key", REPORTS)
def test_every_declared_explorer_axis_is_labelled_and_one_whose_labels_are_missing_fails_loudly(runs, key):
    """A report's explorer declaration (symbol -> label key) against its run: every declared symbol labels a recorded
    tensor's axis with a list of the axis's length; a key the run has no list for, or a list of another length, is an
    error naming the axis, never an axis silently numbered."""
    exploration, run = REPORTS[key].exploration, runs[key]
    labels, declared = run_labels(exploration, run), run.declared
    for symbol, label_key in exploration.axis_labels.items():
        name = next((n for n in run.recording if n in declared and symbol in declared[n].shape), None)
        assert name is not None, f"{key}: no recorded tensor has the declared axis {symbol}"
        named, shape = declared[name].shape, tuple(run.cpu(name).shape)
        axis = named.index(symbol)
        assert axis_labels(exploration, named, shape, labels, name)[axis] == label_key
        assert len(labels[label_key]) == shape[axis]
        without = {k: v for k, v in labels.items() if k != label_key}
        with pytest.raises(UnlabelledAxis, match=f"{re.escape(name)}: axis {symbol} is labelled {label_key!r}"):
            axis_labels(exploration, named, shape, without, name)
        with pytest.raises(UnlabelledAxis, match=f"has {shape[axis]} entries"):
            axis_labels(exploration, named, shape, {**labels, label_key: [*labels[label_key], "one too many"]}, name)


def test_an_attention_group_whose_labels_do_not_fit_its_tensor_is_refused(tmp_path):
    """A 7×7 attention tensor labelled with 6 entries (a wrong axis pair) is an error, not an explorer mislabelled."""
    probs = torch.softmax(torch.randn(1, 2, 7, 7), dim=-1)
    group = {"key": "g", "title": "g", "unit": "layer", "layers": ["p"], "rows": "six", "cols": "seven", "image": None}
    labels = {"six": [str(i) for i in range(6)], "seven": [str(i) for i in range(7)]}
    with pytest.raises(UnlabelledAxis, match="query axis has 7 entries, but its labels 'six' are 6"):
        write_tensor_data(tmp_path, {"p": probs}, labels=labels, axes={}, attention=[group])
    write_tensor_data(tmp_path, {"p": probs}, labels=labels, axes={}, attention=[{**group, "rows": "seven"}])


def test_the_built_site_with_default_inputs_is_under_80_mb(built_site):
    size = sum(p.stat().st_size for p in built_site.rglob("*") if p.is_file() and not p.is_symlink())
    print(f"site: {size / 1024 / 1024:.1f} MiB")
    assert size < SITE_LIMIT


# ----------------------------------------------------------------------------- in the browser

require_chromium()

from transformer_trace.pdf import serve  # noqa: E402


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.problems = []
    page.on("console", lambda m: page.problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))
    page.on("response", lambda r: page.problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    yield page
    page.close()


READOUT = re.compile(r"^(.+) → (.+): (-?\d+\.\d{4})$")


def _explorer(page, index: int = 0):
    explorer = page.locator(".tt-explorer").nth(index)
    explorer.scroll_into_view_if_needed()
    explorer.locator("canvas.tt-canvas").first.wait_for(timeout=30_000)
    return explorer


def _choose(page, explorer, layer: int, head: int, heads_drawn: int = 1) -> None:
    """Pick a layer and a head (0-based) and wait until that head's map is drawn."""
    explorer.locator("select.tt-layer").select_option(str(layer))
    explorer.locator("select.tt-head").select_option(str(head))
    page.wait_for_function("([el, n]) => el.querySelectorAll('.tt-view canvas.tt-canvas').length === n && el.querySelector('.tt-status').hidden",
                           arg=[explorer.element_handle(), heads_drawn], timeout=30_000)


def _readout(explorer) -> tuple[str, str, float]:
    text = explorer.locator(".tt-readout__value").first.inner_text().strip()
    match = READOUT.match(text)
    assert match, text
    return match.group(1), match.group(2), float(match.group(3))


def _arrow_to(page, canvas, row: int, col: int) -> None:
    canvas.focus()
    page.keyboard.press("Home")
    for _ in range(40):
        page.keyboard.press("PageUp")
    for _ in range(row):
        page.keyboard.press("ArrowDown")
    for _ in range(col):
        page.keyboard.press("ArrowRight")


def _hover(page, canvas, row: int, col: int) -> None:
    geometry = canvas.evaluate("c => ({left: c._tt.left, top: c._tt.top, cw: c._tt.cw, ch: c._tt.ch, width: c._tt.width})")
    box = canvas.bounding_box()
    scale = box["width"] / geometry["width"]
    page.mouse.move(box["x"] + (geometry["left"] + (col + 0.5) * geometry["cw"]) * scale,
                    box["y"] + (geometry["top"] + (row + 0.5) * geometry["ch"]) * scale)


def test_encoder_decoder_layer_2_head_3_shows_the_recomputed_weights(server, page, ed_all_layers):
    page.goto(f"{server}/{ED_11}", wait_until="load")
    explorer = _explorer(page)
    assert explorer.locator("select.tt-layer").input_value() == "0"  # opens on the traced layer
    _choose(page, explorer, layer=1, head=2)
    weights = ed_all_layers["encoder.layers.1.self_attn.probs"][0, 2].numpy()  # layer 2, head 3
    words = "hello from cairo egypt team project".split()
    canvas = explorer.locator(".tt-view canvas.tt-canvas")
    _hover(page, canvas, 2, 4)
    assert _readout(explorer) == ("cairo", "team", pytest.approx(round(float(weights[2, 4]), 4), abs=1e-4))
    for row, col in ((0, 0), (5, 1), (3, 3)):
        _arrow_to(page, canvas, row, col)
        query, key, value = _readout(explorer)
        assert (query, key) == (words[row], words[col])
        assert value == pytest.approx(float(weights[row, col]), abs=5.1e-5)
    assert "layer 2, head 3" in explorer.locator(".tt-readout__where").inner_text()
    # The table alternative holds the same numbers, with the tokens as headers.
    explorer.get_by_role("button", name="Show as table").click()
    table = explorer.locator("table.tt-matrix")
    assert table.locator("thead th").all_inner_texts()[1:] == words
    assert table.locator("tbody th").all_inner_texts() == words
    cells = [[float(c) for c in row.locator("td").all_inner_texts()] for row in table.locator("tbody tr").all()]
    np.testing.assert_allclose(cells, weights, atol=5.1e-5)
    assert not page.problems, page.problems


def test_vit_block_12_head_5_shows_the_recomputed_probabilities_and_the_image_overlay(server, page, vit_block12_probs):
    page.goto(f"{server}/{VIT_13}", wait_until="load")
    explorer = _explorer(page)
    _choose(page, explorer, layer=11, head=4)
    probs = vit_block12_probs[0, 4].numpy()  # block 12, head 5
    canvas = explorer.locator(".tt-view canvas.tt-canvas")
    for row, col in ((0, 0), (0, 7), (3, 2)):
        _arrow_to(page, canvas, row, col)
        query, key, value = _readout(explorer)
        labels = ["[CLS]"] + [f"r{r}c{c}" for r in range(14) for c in range(14)]
        assert (query, key) == (labels[row], labels[col])
        assert value == pytest.approx(float(probs[row, col]), abs=5.1e-5)
    # The overlay: [CLS] by default, over the 14 x 14 patch grid of the image the model saw.
    overlay = explorer.locator(".tt-overlay")
    assert overlay.locator("select.tt-query").input_value() == "0"
    image = overlay.locator("canvas.tt-canvas").evaluate("c => [c._tt.o.background.src, c._tt.o.background.naturalWidth]")
    assert image[0] == f"{server}/vit/data/input.png" and image[1] == 224
    _arrow_to(page, overlay.locator("canvas.tt-canvas"), 3, 5)
    query, key, value = _readout(explorer)
    assert (query, key) == ("[CLS]", "r3c5") and value == pytest.approx(float(probs[0, 1 + 3 * 14 + 5]), abs=5.1e-5)
    # Enter on a heat-map row makes that token the overlay's query.
    _arrow_to(page, canvas, 20, 0)
    page.keyboard.press("Enter")
    assert overlay.locator("select.tt-query").input_value() == "20"
    assert not page.problems, page.problems


@pytest.mark.parametrize("path, grid", [(VIT_13, 14), (TOY_VIT_13, 3)], ids=["vit", "toy-vit"])
def test_the_image_overlay_spans_the_same_box_whatever_its_patch_grid(server, page, path, grid):
    """ViT-B/16's 14 x 14 patches and the toy ViT's 3 x 3 both span about 350 px: the toy's cells are large enough to be
    outlined and to carry their value, the ViT's stay about 25 px, as before."""
    page.goto(f"{server}/{path}", wait_until="load")
    explorer = _explorer(page)
    overlay = explorer.locator(".tt-overlay canvas.tt-canvas")
    overlay.wait_for(timeout=30_000)
    rows, cols, cell_width, cell_height = overlay.evaluate("c => [c._tt.o.rows, c._tt.o.cols, c._tt.cw, c._tt.ch]")
    assert rows == cols == grid and cell_width == cell_height
    assert 340 <= grid * cell_width <= 380, grid * cell_width
    assert (cell_width >= 100) if grid == 3 else (20 <= cell_width < 32)
    _arrow_to(page, overlay, 1, 2)
    assert _readout(explorer)[1] == "r1c2"
    assert not page.problems, page.problems


def test_keyboard_only_operation(server, page, ed_all_layers):
    page.goto(f"{server}/{ED_26}", wait_until="load")
    _explorer(page)
    for _ in range(400):  # Tab from the top of the page to the explorer's first control
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.classList.contains('tt-layer')"):
            break
    else:
        pytest.fail("Tab never reached the layer select")
    page.keyboard.press("ArrowDown")  # layer 1 -> layer 2
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.classList.contains('tt-head')")
    page.keyboard.press("ArrowDown")  # all heads -> head 1
    page.keyboard.press("ArrowDown")  # -> head 2
    explorer = page.locator(".tt-explorer")
    assert explorer.locator("select.tt-layer").input_value() == "1" and explorer.locator("select.tt-head").input_value() == "1"
    page.wait_for_function("el => el.querySelectorAll('.tt-view canvas.tt-canvas').length === 1", arg=explorer.element_handle())
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.matches('.tt-view canvas.tt-canvas')")
    outline = page.evaluate("() => { const s = getComputedStyle(document.activeElement); return [s.outlineStyle, parseFloat(s.outlineWidth)]; }")
    assert outline[0] != "none" and outline[1] >= 2, f"no visible focus: {outline}"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    weights = ed_all_layers["decoder.layers.1.self_attn.probs"][0, 1].numpy()
    words = "we are debugging transformer today".split()
    query, key, value = _readout(explorer)
    assert (query, key) == (words[3], words[1]) and value == pytest.approx(float(weights[3, 1]), abs=5.1e-5)
    assert explorer.locator(".tt-readout").get_attribute("aria-live") == "polite"
    page.keyboard.press("Tab")  # to "Show as table", opened with the keyboard
    assert page.evaluate("() => document.activeElement.textContent") == "Show as table"
    page.keyboard.press("Enter")
    assert explorer.locator("table.tt-matrix").is_visible()
    assert not page.problems, page.problems


def test_explorer_and_value_browser_work_under_a_sub_path(built_site, browser, tmp_path):
    (tmp_path / "transformer-trace").symlink_to(built_site, target_is_directory=True)  # as on GitHub Pages: /<repository>/
    page = browser.new_page()
    problems = []
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    with serve(tmp_path) as url:
        for path, heads in ((ED_11, 4), (VIT_13, 12)):
            page.goto(f"{url}/transformer-trace/{path}", wait_until="load")
            explorer = _explorer(page)
            page.wait_for_function("([el, n]) => el.querySelectorAll('.tt-view canvas.tt-canvas').length === n", arg=[explorer.element_handle(), heads])
            page.locator(".tt-values-box summary").first.click()
            page.locator(".tt-values table.tt-matrix").first.wait_for(timeout=30_000)
        image = explorer.locator(".tt-overlay canvas.tt-canvas").evaluate("c => [c._tt.o.background.src, c._tt.o.background.naturalWidth]")
        assert image == [f"{url}/transformer-trace/vit/data/input.png", 224]
    page.close()
    assert not problems, problems


def _deployed_at(page, server: str) -> None:
    """Serve sitemap.xml as if the site had been built for this server's address.

    Material navigates instantly only to URLs listed in sitemap.xml, which carry site_url (host,
    port and path); on the test server's random port it would fall back to full page loads.
    """
    def fulfil(route):
        response = route.fetch()
        text = response.text()
        site_url = re.search(r"<loc>(.*?)</loc>", text).group(1)  # the home page: site_url itself
        route.fulfill(response=response, body=text.replace(site_url, f"{server}/"))

    page.route("**/sitemap.xml", fulfil)


def test_instant_navigation_between_attention_pages_keeps_the_explorer_working(server, page, ed_all_layers):
    _deployed_at(page, server)
    with page.expect_response("**/sitemap.xml"):
        page.goto(f"{server}/{ED_11}", wait_until="load")
    _explorer(page)
    page.wait_for_timeout(300)  # Material reads the sitemap before it intercepts clicks
    page.evaluate("() => { window.__sameDocument = true; }")
    page.locator(".md-tabs__link", has_text="Encoder–decoder").click()  # Material's instant navigation
    page.wait_for_url("**/encoder-decoder/")
    page.get_by_role("link", name="#26", exact=True).click()
    page.wait_for_url(f"**/{ED_26}")
    page.wait_for_function("() => document.querySelector('h1').textContent.startsWith('#26')")
    assert page.evaluate("() => window.__sameDocument === true"), "the page was reloaded, not navigated instantly"
    explorer = _explorer(page)
    _choose(page, explorer, layer=0, head=3)
    _arrow_to(page, explorer.locator(".tt-view canvas.tt-canvas"), 4, 2)
    weights = ed_all_layers["decoder.layers.0.self_attn.probs"][0, 3].numpy()
    assert _readout(explorer)[2] == pytest.approx(float(weights[4, 2]), abs=5.1e-5)
    page.go_back()
    page.go_back()
    page.wait_for_url(f"**/{ED_11}")
    page.wait_for_function("() => document.querySelector('h1').textContent.startsWith('#11')")
    explorer = _explorer(page)
    assert page.evaluate("() => window.__sameDocument === true")
    assert explorer.locator(":scope > .tt-controls").count() == 1, "initialised twice"
    assert page.locator(".tt-explorer[data-tt-ready]").count() == 1
    assert explorer.locator(".tt-view canvas.tt-canvas").count() == 4
    assert not page.problems, page.problems


def test_value_browser_loads_lazily_and_shows_the_numbers_numpy_reads(server, page, built_docs):
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(f"{server}/{ED_07}", wait_until="load")
    page.wait_for_timeout(500)
    assert not any("/data/" in url for url in requested), "data fetched before the value browser was opened"
    page.locator(".tt-values-box summary").first.click()
    values = page.locator(".tt-values").first
    values.locator("table.tt-matrix").wait_for(timeout=30_000)
    q = np.load(built_docs / "encoder-decoder" / "data" / "encoder.layers.0.self_attn.q.npy")
    assert values.locator("thead th").nth(1).inner_text() == "0"
    assert values.locator("tbody th").all_inner_texts() == "hello from cairo egypt team project".split()
    assert float(values.locator("tbody tr").nth(4).locator("td").nth(17).inner_text()) == pytest.approx(float(q[0, 4, 17]), abs=5.1e-5)
    values.locator("select.tt-digits").select_option("full")
    assert np.float32(values.locator("tbody tr").nth(4).locator("td").nth(17).inner_text()) == q[0, 4, 17]

    # A 4-D tensor: the leading indices pick the slice; a wide one: the column window.
    page.goto(f"{server}/{ED_11}", wait_until="load")
    page.locator(".tt-values-box summary").first.click()
    values = page.locator(".tt-values").first
    values.locator("table.tt-matrix").wait_for(timeout=30_000)
    values.locator("input.tt-axis").nth(1).fill("2")
    assert values.locator(".tt-axis-note").nth(1).inner_text() == "= head 3"
    w = np.load(built_docs / "encoder-decoder" / "data" / "encoder.layers.0.self_attn.probs.npy")
    assert float(values.locator("tbody tr").nth(3).locator("td").nth(4).inner_text()) == pytest.approx(float(w[0, 2, 3, 4]), abs=5.1e-5)

    page.goto(f"{server}/{VIT_17}", wait_until="load")
    page.locator(".tt-values-box summary").first.click()
    values = page.locator(".tt-values").first
    values.locator("table.tt-matrix").wait_for(timeout=30_000)
    values.locator("input.tt-col-start").fill("2000")
    values.locator("select.tt-digits").select_option("full")
    hidden = np.load(built_docs / "vit" / "data" / "blocks.0.mlp.hidden.npy")
    assert values.locator("thead th").nth(1).inner_text() == "2000"
    assert np.float32(values.locator("tbody tr").nth(5).locator("td").nth(3).inner_text()) == hidden[0, 5, 2003]
    _arrow_to(page, values.locator("canvas.tt-canvas"), 5, 3)  # the heat map reads out the same value
    prefix, shown = values.locator(".tt-readout__value").inner_text().split(" = ")
    assert prefix == "blocks.0.mlp.hidden[0, 5, 3]" and np.float32(shown) == hidden[0, 5, 3]
    assert not page.problems, page.problems


def test_npy_parser_reads_every_supported_dtype_and_header_version(browser, tmp_path):
    arrays = {
        "f4": np.arange(-3, 9, dtype="<f4").reshape(3, 4) / 3, "f2": np.array([[0.5, -2.0, np.inf], [1e-3, 65504, -0.0]], "<f2"),
        "f8": np.array([np.pi, -np.e, 1e300]), "i8": np.array([-(2**40), 0, 7], "<i8"), "i4": np.array([[-5], [6]], "<i4"),
        "b1": np.array([True, False, True]), "u1": np.array([0, 128, 255], "|u1"), "scalar": np.float32(2.5),
    }
    blobs = {}
    for name, array in arrays.items():
        for version in ((1, 0), (2, 0), (3, 0)):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(array), version=version)
            blobs[f"{name}-v{version[0]}"] = buffer.getvalue()
            (tmp_path / f"{name}-v{version[0]}.npy").write_bytes(buffer.getvalue())
    (tmp_path / "index.html").write_text("<!doctype html><title>npy</title>", encoding="utf-8")
    page = browser.new_page()
    with serve(tmp_path) as url:
        page.goto(f"{url}/index.html")
        page.add_script_tag(path=str(ROOT / "generator" / "assets" / "tt-explorer.js"))
        for name, array in arrays.items():
            for version in (1, 2, 3):
                got = page.evaluate("""async file => {
                    const t = ttExplorer.parseNpy(await (await fetch(file)).arrayBuffer());
                    return {shape: t.shape, dtype: t.dtype, data: Array.from(t.data, v => Number.isFinite(v) ? v : String(v))};
                }""", f"{name}-v{version}.npy")
                expected = np.asarray(array)
                assert got["shape"] == list(expected.shape) and got["dtype"] == expected.dtype.str, (name, version)
                values = [float(v) if not isinstance(v, str) else float(v.replace("Infinity", "inf")) for v in got["data"]]
                np.testing.assert_array_equal(np.array(values, dtype=np.float64), expected.astype(np.float64).ravel(), err_msg=f"{name} v{version}")
    page.close()


def test_user_words_are_shown_literally_in_the_explorer(browser, tmp_path):
    from transformer_trace.cli import main
    from tests.conftest import mkdocs_build
    from tests.test_robustness import HOSTILE_SRC, HOSTILE_TGT

    docs = tmp_path / "docs"
    assert main(["build", "--model", "encoder-decoder", "--src", HOSTILE_SRC, "--tgt", HOSTILE_TGT, "--out", str(docs), "-q"]) == 0
    labels = json.loads((docs / "encoder-decoder" / "data" / "index.json").read_text(encoding="utf-8"))["labels"]
    src, tgt = HOSTILE_SRC.split(), HOSTILE_TGT.split()
    assert labels["src_tokens"] == src and labels["tgt_tokens"] == tgt
    result = mkdocs_build(docs, tmp_path / "site")
    assert result.returncode == 0, result.stderr[-2000:]
    page = browser.new_page()
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    with serve(tmp_path / "site") as url:
        page.goto(f"{url}/encoder-decoder/decoder/34-cross-attention-score-matrix-after-softmax/", wait_until="load")
        explorer = _explorer(page)
        _choose(page, explorer, layer=0, head=0)
        _arrow_to(page, explorer.locator(".tt-view canvas.tt-canvas"), 0, 0)
        assert _readout(explorer)[:2] == (tgt[0], src[0])
        explorer.get_by_role("button", name="Show as table").click()
        table = explorer.locator("table.tt-matrix")
        assert table.locator("thead th").all_inner_texts()[1:] == src
        assert table.locator("tbody th").all_inner_texts() == tgt
        assert explorer.locator("option").all_inner_texts()[:3] == ["layer 1", "layer 2", "all heads"]
        assert page.locator(".tt-explorer script, .tt-explorer img").count() == 0
    page.close()
    assert not dialogs


def test_the_gpt_explorer_opens_on_the_previous_token_head_the_page_names(server, page, runs):
    block, head = runs["gpt"].inputs["training"]["best_head"]  # 0-based, measured on the default run
    page.goto(f"{server}/{GPT_14}", wait_until="load")
    assert f"**block {block + 1}, head {head + 1}**" not in page.content()  # rendered, not raw Markdown
    assert f"block {block + 1}, head {head + 1}" in page.locator("article").inner_text()
    explorer = _explorer(page)
    assert explorer.locator("select.tt-layer").input_value() == str(block)
    assert explorer.locator("select.tt-head").input_value() == str(head)
    assert page.problems == []
