"""The toy ViT report (seed 004's 6×6 walkthrough, computed for real): everything specific to it lives in this folder,
and ``REPORT`` below is the report, one object whose parts come from these modules by name:

catalogue.py     snapshots in the seed's order, stages, figures, questions     options.py  --pixels, --weights
runner.py        records a pass and sets the seed's numbers beside it
checks.py, figures.py  its own checks and drawings
seed.py          the seed's weights, and every printed result compared (seed_004.csv: the printed numbers, by line)
explore.py       what the explorer ships as data (the attention over the 3×3 patch grid)
benchmark.py     its forward pass against torch.nn's, and its whole build, timed
templates/       explain.md.j2, inputs.md.j2, questions.md.j2
"""

from pathlib import Path

from transformer_trace.catalogue import Report
from transformer_trace.report_parts import Benchmark
from transformer_trace.reports.toy_vit import benchmark, catalogue, checks, figures, runner
from transformer_trace.reports.toy_vit.explore import EXPLORATION
from transformer_trace.reports.toy_vit.options import ToyVitOptions

REPORT = Report.from_catalogue(
    catalogue,
    checks=checks.CHECKS,  # the report's own checks and drawings, beside the generic ones
    drawings=figures.DRAWINGS,
    key="toy-vit",
    title="Toy ViT by hand (seed 004, 6×6 image)",
    short_title="Toy ViT",
    label_format="T{n:02d}",
    options=ToyVitOptions,
    runner=runner.run,
    templates=Path(__file__).parent / "templates",
    benchmark=Benchmark(model_tables=benchmark.model_tables, targets=benchmark.targets),
    exploration=EXPLORATION,
    variables_from="seed 004",
    whole_values=True,  # every tensor is small enough to print whole, as the seed's tables do
)
