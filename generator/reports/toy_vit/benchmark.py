"""The toy ViT: its forward pass against torch.nn's post-norm encoder layer, and its whole build, timed in-process
(benchmarks/run.py runs every report's benchmark.py; see generator/reports/vit/benchmark.py for the functions it calls).

The issue's speed goal lives here, not in a timed test: the report (forward pass, pages, data files, figures) builds in
under a second of generator time.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from transformer_trace.models.recording import recording

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report

BUILD = "generator build of the report (forward, pages, data, figures)"


def _build_seconds(report: Report) -> float:
    from transformer_trace.build import build
    from transformer_trace.progress import Progress

    work = Path(tempfile.mkdtemp(prefix="bench-toy-"))
    try:
        started = time.perf_counter()
        build(work / "docs", {report.key: report.run_options(device="cpu")}, Progress(enabled=False),
              reports={report.key: report})
        return time.perf_counter() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)


def model_tables(report: Report, device: torch.device, repeats: int,
                 interleaved) -> list[tuple[str, list[tuple[str, float]], float]]:
    if device.type != "cpu":  # four numbers wide: a GPU would time its launch overhead
        return []
    from transformer_trace.reports.toy_vit import seed
    from transformer_trace.models.toy_vit import ToyViTConfig, ToyVisionTransformer

    cfg = ToyViTConfig()
    model = ToyVisionTransformer(cfg).eval()
    model.load_state_dict(seed.state_dict(cfg))
    image = seed.image()
    layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.mlp_dim, dropout=0.0, activation="relu",
                                       batch_first=True).eval()

    def reference():
        x = torch.cat([model.class_token, model.patch_embed(image)], dim=1) + model.pos_embedding
        return model.head(layer(x)[:, 0])

    def recorded():
        with recording():
            model(image)

    with torch.no_grad():
        t = interleaved({"torch": reference, "off": lambda: model(image), "on": recorded}, repeats * 5)
    rows = [("torch.nn encoder layer", t["torch"]), ("ours, recording off", t["off"]),
            ("ours, recording on (all tensors)", t["on"])]
    builds = sorted(_build_seconds(report) for _ in range(max(1, repeats)))
    return [("Toy ViT forward (seed 004's 6×6 image), CPU", rows, rows[0][1]),
            ("Toy ViT report, CPU", [(BUILD, builds[len(builds) // 2])], builds[len(builds) // 2])]


def targets(tables: list[tuple[str, list[tuple[str, float]], float]]) -> list[tuple[str, str, bool]]:
    seconds = dict(tables[1][1])[BUILD]
    return [("Toy ViT report builds in under 1 s of generator time", f"{seconds:.2f} s", seconds < 1.0)]
