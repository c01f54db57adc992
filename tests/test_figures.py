"""Pixel figures drawn with Pillow show what matplotlib showed: the same colour maps, scales and labels, same bytes each time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import Normalize
from PIL import Image

from generator import raster
from generator.figures import DRAWERS, draw
from generator.reports import REPORTS

ROOT = Path(__file__).resolve().parent.parent
COLORMAPS = sorted(path.stem for path in raster.COLORMAPS.glob("*.rgb"))


@pytest.mark.parametrize("name", COLORMAPS)
def test_a_copied_colour_table_is_matplotlibs(name):
    expected = (matplotlib.colormaps[name](np.arange(256))[:, :3] * 255).round().astype(np.uint8)
    assert np.array_equal(raster.colormap(name), expected)


@pytest.mark.parametrize("name", COLORMAPS)
def test_values_get_the_colours_matplotlib_gives_them(name):
    values = np.concatenate([np.random.default_rng(0).normal(size=500), [-3.0, -1.5, 0.0, 1.5, 3.0, -1e9, 1e9]])
    vmin, vmax = -1.5, 1.5
    expected = matplotlib.colormaps[name](Normalize(vmin, vmax)(values), bytes=True)[:, :3]
    got = raster.colorize(values, name, vmin, vmax)
    assert np.abs(got.astype(int) - expected.astype(int)).max() <= 1  # matplotlib's bytes truncate, the table rounds


def test_a_heat_map_cell_has_the_colour_of_its_value(tmp_path):
    data = np.array([[0.0, 0.25], [0.5, 1.0]])
    canvas = raster.Canvas()
    raster.heatmap(canvas, 0, 0, data, 40, 40, "viridis", 0.0, 1.0)
    canvas.save(tmp_path / "cells.png")
    picture = np.asarray(Image.open(tmp_path / "cells.png").convert("RGB"))
    for (i, j), value in np.ndenumerate(data):
        centre = picture[raster.MARGIN + 1 + 10 + 20 * i, raster.MARGIN + 1 + 10 + 20 * j]
        assert np.abs(centre.astype(int) - raster.colorize(np.array([value]), "viridis", 0, 1)[0]).max() <= 8, (i, j)


def test_colour_bar_ticks_are_round_numbers_with_one_format():
    assert raster.nice_ticks(0.0, 0.33) == pytest.approx([0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3])
    assert raster.tick_labels(raster.nice_ticks(0.0, 0.33)) == ["0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30"]
    assert raster.tick_labels(raster.nice_ticks(-2.1, 2.1)) == ["−2", "−1", "0", "1", "2"]  # a minus sign, as matplotlib


def test_text_in_any_script_is_drawn_and_latin_needs_no_fallback_font():
    assert raster._font_files()[0].name == "DejaVuSans.ttf" and raster._font_files()[0].is_file()
    assert raster._runs("hello") == [(0, "hello")]
    for text in ("héllo", "中文", "שלום", "␠", "😀", ""):
        assert raster.text_mask(text, 9).height > 0


@pytest.mark.parametrize("key", list(REPORTS))
def test_every_figure_is_the_same_png_when_drawn_twice(runs, key, tmp_path):
    run = runs[key]
    for fig in REPORTS[key].figures:
        args = {k: run.name(v) if isinstance(v, str) else v for k, v in fig.args.items()}
        first, second = tmp_path / f"{fig.id}-1.png", tmp_path / f"{fig.id}-2.png"
        draw(run, fig.kind, args, first)
        draw(run, fig.kind, args, second)
        assert first.read_bytes() == second.read_bytes(), fig.id
        with Image.open(first) as image:
            assert image.mode == "P" and 200 <= max(image.size) <= 2600, (fig.id, image.size)


def test_every_report_draws_without_importing_matplotlib_or_torchvision(tmp_path):
    """A figure costs milliseconds; importing matplotlib (or torchvision) would cost more than every figure together."""
    code = f"""
import sys
from pathlib import Path
from generator.figures import draw
from generator.reports import REPORTS
for key, options in (("encoder-decoder", {{}}), ("vit", {{"size": "tiny"}}), ("gpt", {{}})):
    report = REPORTS[key]
    run = report.run(report.options(device="cpu", **options))
    for fig in report.figures:
        args = {{k: run.name(v) if isinstance(v, str) else v for k, v in fig.args.items()}}
        draw(run, fig.kind, args, Path({str(tmp_path)!r}) / f"{{key}}-{{fig.id}}.png")
print(sorted(name for name in ("matplotlib", "torchvision") if name in sys.modules))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "[]"
    assert len(list(tmp_path.glob("*.png"))) == sum(len(report.figures) for report in REPORTS.values())


def test_every_drawer_is_registered_once_per_kind_in_the_catalogues():
    kinds = {fig.kind for report in REPORTS.values() for fig in report.figures}
    for report in REPORTS.values():
        report.load()
    assert kinds <= set(DRAWERS)


def test_a_bar_reaches_its_value_on_the_axis_in_its_colour(tmp_path):
    canvas = raster.Canvas()
    axes = raster.Axes(canvas, 0, 0, 100, 200, (-1.0, 1.0), (0.0, 1.0))
    axes.bar(0.0, 0.5, 0.8, "#3949ab")
    canvas.save(tmp_path / "bar.png")
    picture = np.asarray(Image.open(tmp_path / "bar.png").convert("RGB")).astype(int)
    m = raster.MARGIN + 1  # the frame is one pixel outside the plot area
    assert np.abs(picture[m + 150, m + 50] - [0x39, 0x49, 0xAB]).max() <= 8  # inside the bar (value 0.25)
    assert (picture[m + 90, m + 50] == 255).all()  # above it (value 0.55): background
    assert (picture[m + 150, m + 5] == 255).all()  # beside it


def test_a_dashed_line_has_gaps_where_a_solid_line_has_none(tmp_path):
    rows = {}
    for name, pattern in (("solid", None), ("dashed", raster.DASHED), ("dotted", raster.DOTTED)):
        canvas = raster.Canvas()
        axes = raster.Axes(canvas, 0, 0, 200, 40, (0.0, 1.0), (0.0, 1.0))
        axes.hline(0.5, "#e53935", 1.5, pattern)
        canvas.save(tmp_path / f"{name}.png")
        picture = np.asarray(Image.open(tmp_path / f"{name}.png").convert("RGB")).astype(int)
        rows[name] = picture[raster.MARGIN + 1 + 20, raster.MARGIN + 1:raster.MARGIN + 201]
    red = lambda row: (row[:, 1] < 128).mean()  # noqa: E731 - share of the row that is (mostly) red
    assert red(rows["solid"]) == 1.0
    assert 0.6 < red(rows["dashed"]) < 0.8  # 3.7 on, 1.6 off
    assert 0.2 < red(rows["dotted"]) < 0.5  # 1 on, 1.65 off
