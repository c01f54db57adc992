"""The decoder-only GPT report (byte level): everything specific to it lives in this folder, and ``REPORT`` below is
the report, one object whose parts come from these modules by name (transformer_trace.catalogue.Report checks them):

catalogue.py     snapshots, stages, figures, questions        options.py   command-line options and validation
runner.py        records a pass, a greedy generation and the prompt with its last byte changed (and begins the
                 held-out score ahead: its starter)
checks.py, figures.py  its own checks and drawings            training.py  the training recipe (`generator train gpt`)
explore.py       what the explorer ships as data (every layer's attention and output, axis labels)
trace.py         how a traced script marks its snapshots and which inputs its tensors label
templates/       explain.md.j2, inputs.md.j2, questions.md.j2
"""

from pathlib import Path

from transformer_trace.catalogue import Report
from transformer_trace.report_parts import Training
from transformer_trace.reports.gpt import catalogue, checks, figures, runner, trace, training
from transformer_trace.reports.gpt.explore import EXPLORATION
from transformer_trace.reports.gpt.options import GPTOptions

REPORT = Report.from_catalogue(
    catalogue,
    checks=checks.CHECKS,  # the report's own checks and drawings, beside the generic ones
    drawings=figures.DRAWINGS,
    key="gpt",
    title="Decoder-only GPT (byte level)",
    short_title="GPT",
    label_format="G{n:02d}",
    options=GPTOptions,
    runner=runner.run,
    starter=runner.start,  # the held-out score, measured beside the other reports' runs
    templates=Path(__file__).parent / "templates",
    trace=trace.TRACE,
    training=Training(main=training.main, checkpoint=training.CHECKPOINT, load_record=training.load_record,
                      record_path=training.record_path),
    exploration=EXPLORATION,
    variables_from="forward-pass code",  # no seed report: the names a nanoGPT-style forward pass uses
)
