"""Any value a traced script produces gets pages that say what it is (issue 32, point 0): a mask that blocks every
position (NaN attention rows), all-NaN or all-inf tensors, a tensor far wider than the catalogue's, a ViT snapshot given
a scalar-like, a list or a (3, 3). Figure drawing and the statistics are fuzzed with NaN, inf, empty, huge and odd
shapes: a figure that cannot be drawn from a value says so on its page, and the report is written."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer_trace import raster
from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.tensors import TensorView
from tests.conftest import ROOT

ODD_ARRAYS = {
    "all NaN": np.full((3, 4), np.nan), "all inf": np.full((3, 4), np.inf),
    "inf and -inf": np.array([[np.inf, -np.inf]]),
    "empty": np.zeros((0, 0)), "no columns": np.zeros((5, 0)), "2 × 5000": np.random.default_rng(0).random((2, 5000)),
    "huge": np.full((2, 2), 1e308), "tiny": np.full((2, 2), 1e-308), "constant": np.ones((4, 4)),
    "NaN and values": np.array([[np.nan, 1.0], [2.0, np.inf]]),
}


@pytest.mark.parametrize("name", ODD_ARRAYS)
def test_heat_maps_colour_bars_and_overlays_draw_any_array(tmp_path, name):
    data = ODD_ARRAYS[name]
    limit = raster.finite_limit(data)
    assert math.isfinite(limit) and limit > 0
    canvas = raster.Canvas()
    raster.heatmap(canvas, 0, 0, data, 400, round(400 * 2 / 5000), "viridis", -limit, limit, smooth=True)
    raster.heatmap(canvas, 0, 20, data, 40, 30, "RdBu_r", float("nan"), float("inf"))
    raster.colorbar(canvas, 450, 0, 100, "viridis", float("nan"), float("nan"))
    canvas.save(tmp_path / "figure.png")
    assert (tmp_path / "figure.png").stat().st_size > 100
    if data.size:
        image = np.zeros((*data.shape, 3))
        assert raster.overlay(image, data, "inferno", 0.5, 64).width == 64


def test_colours_at_the_ends_of_the_float64_range_are_the_colour_maps_ends():
    colours = raster.colorize(np.array([1e308, -1e308, np.nan]), "viridis", -1e308, 1e308)
    table = raster.colormap("viridis")
    assert (colours[0] == table[255]).all() and (colours[1] == table[0]).all() and (colours[2] == 255).all()


ODD_TENSORS = {
    "empty": torch.ones(0), "no rows": torch.ones(0, 3), "no columns": torch.ones(3, 0),
    "empty middle": torch.ones(2, 0, 3), "all NaN": torch.full((2, 3), math.nan),
    "all inf": torch.full((2, 3), -math.inf),
    "bool": torch.ones(2, 3, dtype=torch.bool), "complex": torch.tensor([[1 - 2j, 3j]]),
    "huge": torch.full((2,), 1e308, dtype=torch.float64), "0-d": torch.tensor(2.0),
}


@pytest.mark.parametrize("name", ODD_TENSORS)
def test_statistics_and_value_grids_describe_any_tensor(name):
    view = TensorView(name, ODD_TENSORS[name])
    assert set(view.stats) >= {"min", "max", "mean", "std", "nan", "inf"}
    for whole in (False, True):
        _, grid = view.slice_text(whole=whole)
        assert grid
    assert len(view.max_index()) in (0, view.tensor.dim())
    if view.numel == 0:
        assert view.slice_text()[1] == "[]"


def _script(folder: Path, report: str, value: str) -> Path:
    """A script whose every marker of ``report``'s numbering captures ``value``."""
    spec = REPORTS[report].trace
    lines = ["import torch"]
    for snap in REPORTS[report].snapshots:
        n = snap.number
        lines += ([f"x{n} = {value}", f"# {spec.keyword} {spec.letter}{n:02d}"] if spec.keyword == "BREAKPOINT"
                  else [f"x{n} = {value}  # Snapshot #{n}"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "values.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / "values.py"


def _traced(tmp_path: Path, script: Path, capsys) -> dict:
    code = main(["trace", str(script), "--out", str(tmp_path / "docs"), "--name", "t", "-q"])
    err = capsys.readouterr().err
    assert code in (0, 1, 2) and "internal error" not in err and "Traceback" not in err, err
    return json.loads((tmp_path / "docs" / "t" / "snapshots.json").read_text(encoding="utf-8"))


VALUES = {"ones(1)": "torch.ones(1)", "a list": "[1, 2, 3]", "(3, 3)": "torch.ones(3, 3)",
          "all NaN": "torch.full((1, 4, 7, 7), float('nan'))", "(1, 1, 2, 5000)": "torch.ones(1, 1, 2, 5000)",
          "all inf": "torch.full((1, 4, 7, 7), float('inf'))", "empty": "torch.ones(0)", "bool": "torch.ones(2, 3) > 0",
          "meta": "torch.ones(2, 3, device='meta')", "complex": "torch.ones(2, 3, dtype=torch.complex64)",
          "None": "None"}
ISSUE_CASES = {("vit", "ones(1)"), ("vit", "a list"), ("vit", "(3, 3)"), ("encoder-decoder", "(1, 1, 2, 5000)"),
               ("encoder-decoder", "all NaN"), ("vit", "all NaN"), ("gpt", "all inf"), ("vit", "empty")}


@pytest.mark.parametrize("report, value", [
    pytest.param(report, value, marks=[] if (report, value) in ISSUE_CASES else [pytest.mark.slow])
    for report in ("encoder-decoder", "vit", "gpt") for value in VALUES])
def test_every_snapshot_given_any_value_gets_its_report(tmp_path, capsys, report, value):
    data = _traced(tmp_path, _script(tmp_path / "src", report, VALUES[value]), capsys)
    assert data["outcome"]["counts"]["captured"] == len(REPORTS[report].snapshots)


def test_a_mask_that_blocks_every_position_gets_its_report_with_the_nan_attention_shown(tmp_path, capsys):
    example = (ROOT / "examples" / "encoder_decoder_trace.py").read_text(encoding="utf-8")
    causal = 'torch.triu(torch.full((T, T), float("-inf")), diagonal=1)[None, None]'
    assert causal in example
    script = tmp_path / "src" / "blocked.py"
    script.parent.mkdir()
    script.write_text(example.replace(causal, 'torch.full((T, T), float("-inf"))[None, None]'), encoding="utf-8")
    _traced(tmp_path, script, capsys)
    pages = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "docs" / "t").rglob("*.md"))
    assert "nan" in pages.lower()
    assert list((tmp_path / "docs" / "t" / "figures").glob("*.png"))
