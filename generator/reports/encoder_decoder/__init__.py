"""The encoder–decoder report (seed report 001): everything specific to it lives in this folder, and ``REPORT``
below is the report, one object whose parts come from these modules by name (transformer_trace.catalogue.Report checks
them):

catalogue.py     snapshots, stages, figures, questions        options.py   command-line options and validation
runner.py        builds the model and records a pass          checks.py, figures.py  its own checks and drawings
explore.py       what the explorer ships as data (every layer's attention and output, axis labels)
trace.py         how a traced script marks its snapshots and which inputs its tensors label
benchmark.py     its model's speed against torch.nn's         templates/   explain.md.j2, inputs.md.j2, questions.md.j2
"""

from pathlib import Path

from transformer_trace.catalogue import Report
from transformer_trace.report_parts import Benchmark
from transformer_trace.reports.encoder_decoder import benchmark, catalogue, checks, figures, runner, trace
from transformer_trace.reports.encoder_decoder.explore import EXPLORATION
from transformer_trace.reports.encoder_decoder.options import EncoderDecoderOptions

REPORT = Report.from_catalogue(
    catalogue,
    checks=checks.CHECKS,  # the report's own checks and drawings, beside the generic ones
    drawings=figures.DRAWINGS,
    key="encoder-decoder",
    title="Encoder–decoder Transformer",
    short_title="Encoder–decoder",
    label_format="#{n}",
    options=EncoderDecoderOptions,
    runner=runner.run,
    templates=Path(__file__).parent / "templates",
    trace=trace.TRACE,
    benchmark=Benchmark(model_tables=benchmark.model_tables, targets=benchmark.targets),
    exploration=EXPLORATION,
)
