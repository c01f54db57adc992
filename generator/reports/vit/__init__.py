"""The Vision Transformer report (seed report 000, ViT-B/16): everything specific to it lives in this folder, and
``REPORT`` below is the report, one object whose parts come from these modules by name:

catalogue.py     snapshots, stages, figures, questions        options.py   command-line options and validation
runner.py        loads the image and records a pass          weights.py   weights presets (preprocessing, class names)
images.py        image loading and preprocessing             checks.py, figures.py  its own checks and drawings
rollout.py       attention rollout (its own page)            explore.py   what the explorer ships as data
trace.py         how a traced script marks its snapshots and which inputs its tensors label
benchmark.py     its forward pass against torchvision's vit_b_16
templates/       explain.md.j2, inputs.md.j2, questions.md.j2, rollout.md.j2; assets/ the bundled image
"""

from pathlib import Path

from transformer_trace.catalogue import Report
from transformer_trace.report_parts import Benchmark
from transformer_trace.reports.vit import benchmark, catalogue, checks, figures, runner, trace
from transformer_trace.reports.vit.explore import EXPLORATION
from transformer_trace.reports.vit.options import VitOptions

REPORT = Report.from_catalogue(
    catalogue,
    checks=checks.CHECKS,  # the report's own checks and drawings, beside the generic ones
    drawings=figures.DRAWINGS,
    key="vit",
    title="Vision Transformer (ViT-B/16)",
    short_title="ViT",
    label_format="S{n:02d}",
    options=VitOptions,
    runner=runner.run,
    templates=Path(__file__).parent / "templates",
    trace=trace.TRACE,
    benchmark=Benchmark(model_tables=benchmark.model_tables, targets=benchmark.targets),
    exploration=EXPLORATION,
)
