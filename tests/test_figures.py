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

from transformer_trace import raster, raster_text
from transformer_trace.reports import REPORTS

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
    assert raster_text._font_files()[0].name == "DejaVuSans.ttf" and raster_text._font_files()[0].is_file()
    assert raster_text._runs("hello") == [(0, "hello")]
    for text in ("héllo", "中文", "שלום", "␠", "😀", ""):
        assert raster.text_mask(text, 9).height > 0


@pytest.mark.parametrize("key", list(REPORTS))
def test_every_figure_is_the_same_png_when_drawn_twice(runs, key, tmp_path):
    run = runs[key]
    for fig in REPORTS[key].figures:
        first, second = tmp_path / f"{fig.id}-1.png", tmp_path / f"{fig.id}-2.png"
        fig.drawing.draw(run, first)
        fig.drawing.draw(run, second)
        assert first.read_bytes() == second.read_bytes(), fig.id
        with Image.open(first) as image:
            assert image.mode == "P" and 200 <= max(image.size) <= 2600, (fig.id, image.size)


def test_every_report_draws_without_importing_matplotlib_or_torchvision(tmp_path):
    """A figure costs milliseconds; importing matplotlib (or torchvision) would cost more than every figure together."""
    code = f"""
import sys
from pathlib import Path
from transformer_trace.reports import REPORTS
for key, report in REPORTS.items():
    options = {{"size": "tiny"}} if key == "vit" else {{}}  # the ViT's figures at a small size: same drawings, less time
    run = report.run(report.options(device="cpu", **options))
    for fig in report.figures:
        fig.drawing.draw(run, Path({str(tmp_path)!r}) / f"{{key}}-{{fig.id}}.png")
print(sorted(name for name in ("matplotlib", "torchvision") if name in sys.modules))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "[]"
    assert len(list(tmp_path.glob("*.png"))) == sum(len(report.figures) for report in REPORTS.values())


def test_every_figure_is_drawn_by_a_registered_drawing():
    for report in REPORTS.values():
        for fig in report.figures:
            assert report.drawings[fig.drawing.key()] is type(fig.drawing), fig.id


def test_a_second_drawing_under_a_taken_name_is_refused():
    from dataclasses import dataclass

    from transformer_trace.figures import DRAWINGS, Drawing
    from transformer_trace.registry import Registry

    @dataclass(frozen=True, kw_only=True)
    class Matrix(Drawing):  # the generic drawing's name
        pass

    with pytest.raises(ValueError, match="two drawings are named 'matrix'"):
        DRAWINGS.merged(Registry("drawing", [(Matrix.key(), Matrix)]))


@pytest.mark.parametrize("key", list(REPORTS))
def test_a_figure_key_changes_with_its_declared_tensors_and_only_with_them(runs, key):
    """The cache key is derived from what the drawing declares it reads: change one of its tensors and the key changes;
    change a tensor no drawing reads and no key changes."""
    import dataclasses

    run, report = runs[key], REPORTS[key]
    keys = {fig.id: fig.drawing.content_key(run) for fig in report.figures}
    fig = next(f for f in report.figures if f.drawing.inputs())
    target = run.name(fig.drawing.inputs()[0])
    read = {run.name(ref) for f in report.figures for ref in f.drawing.inputs()}
    unread = next(name for name in run.recording if name not in read)
    for name in (target, unread):
        original = run.recording[name]
        run.recording[name] = dataclasses.replace(original, tensor=original.tensor + 1)
        run._cpu.clear()
        try:
            changed = {f.id for f in report.figures if f.drawing.content_key(run) != keys[f.id]}
        finally:
            run.recording[name] = original
            run._cpu.clear()
        expected = {f.id for f in report.figures if name in {run.name(ref) for ref in f.drawing.inputs()}}
        assert changed == expected, (name, changed, expected)


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


def test_a_build_forks_its_figure_workers_once_for_every_report_and_draws_the_same_files(tmp_path, monkeypatch):
    """The workers copy the whole build process (models and weights) when forked: one pool draws every report's
    figures, report after report, and the figures are the bytes drawn in the build process itself."""
    import multiprocessing.popen_fork
    import os

    from transformer_trace import build
    from transformer_trace.progress import Progress

    forks: list[int] = []
    launch = multiprocessing.popen_fork.Popen._launch
    monkeypatch.setattr(multiprocessing.popen_fork.Popen, "_launch",
                        lambda self, process_obj: forks.append(1) or launch(self, process_obj))
    reports = ["encoder-decoder", "toy-vit"]

    def build_into(folder: str) -> None:
        build.build(tmp_path / folder, {key: REPORTS[key].options() for key in reports}, Progress(enabled=False),
                    reports=REPORTS)

    build_into("pool")
    figures = sum(len(REPORTS[key].figures) for key in reports)
    cores = os.cpu_count() or 1
    assert len(forks) == (min(figures, cores) if cores > 1 else 0)  # not that many per report
    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # one core: every figure drawn in the build process
    build_into("here")
    for key in reports:
        drawn = sorted((tmp_path / "pool" / key / "figures").glob("*.png"))
        assert [png.stem for png in drawn] == sorted(fig.id for fig in REPORTS[key].figures)
        for png in drawn:
            assert png.read_bytes() == (tmp_path / "here" / key / "figures" / png.name).read_bytes(), png
    assert build._JOBS == []


def _slow_drawing(position: int) -> None:
    import time

    time.sleep(60)  # a drawing on a loaded machine: the interrupted build must not wait for it


def test_an_interrupted_build_does_not_wait_for_the_figures_its_workers_are_drawing(monkeypatch):
    """Ctrl-C during a build (or a regeneration of `serve`) leaves the figure pool at once: the workers drawing are
    killed, not waited for (CI once saw serve take over 60 s to stop after a Ctrl-C under load)."""
    import time

    from transformer_trace import build

    monkeypatch.setattr(build, "_draw_job", _slow_drawing)
    workers = build.FigureWorkers([object(), object()], parallel=True)  # type: ignore[list-item]
    workers.count = 2
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with workers:
            workers.pool.submit(build._draw_job, 0)
            workers.pool.submit(build._draw_job, 1)
            time.sleep(0.5)
            raise KeyboardInterrupt
    assert time.monotonic() - started < 10 and build._JOBS == []
