"""The ViT's forward pass against torchvision's vit_b_16 (benchmarks/run.py runs every report's benchmark.py).

``model_tables(report, device, repeats, interleaved)`` -> [(title, [(row, seconds)], the seconds ratios are taken
against)]; ``targets(tables)`` -> [(target, measured, met)] for the benchmark page's targets table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from transformer_trace.models.recording import recording
from transformer_trace.models.vit import from_torchvision

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report

TORCHVISION, OFF = "torchvision vit_b_16 forward", "ours, recording off"


def vit_models(device: torch.device):
    """torchvision's vit_b_16 with perturbed random weights, and ours carrying the same weights."""
    import torchvision

    torch.manual_seed(0)
    tv = torchvision.models.vit_b_16().eval()
    with torch.no_grad():
        for p in tv.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    ours = from_torchvision(tv).eval()
    return tv.to(device), ours.to(device)


def model_tables(report: Report, device: torch.device, repeats: int,
                 interleaved) -> list[tuple[str, list[tuple[str, float]], float]]:
    tv, ours = vit_models(device)
    x = torch.randn(1, 3, 224, 224, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else None

    def recorded():
        with recording(keep=lambda name: name.startswith("blocks.0.") or "." not in name):
            ours(x)

    with torch.no_grad():
        t = interleaved({"torchvision": lambda: tv(x), "off": lambda: ours(x), "on": recorded},
                        repeats * (4 if sync else 1), sync)
    rows = [(TORCHVISION, t["torchvision"]), (OFF, t["off"]), ("ours, recording on (report's tensors)", t["on"])]
    where = "CPU" if device.type == "cpu" else torch.cuda.get_device_name(device)
    title = "ViT-B/16 forward, batch 1, 224×224, CPU" if device.type == "cpu" else f"ViT-B/16 forward on {where}"
    return [(title, rows, rows[0][1])]


def targets(tables: list[tuple[str, list[tuple[str, float]], float]]) -> list[tuple[str, str, bool]]:
    rows = dict(tables[0][1])  # the CPU table
    ratio = rows[OFF] / rows[TORCHVISION]
    return [("ViT recording off ≤ 1.10× torchvision's forward", f"{ratio:.2f}×", ratio <= 1.10)]
