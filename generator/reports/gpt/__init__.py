"""The decoder-only GPT report (byte level): everything specific to it lives in this folder.

catalogue.py  snapshots, stages, figures, questions     options.py  command-line options and validation
runner.py     builds the model, records a pass and a greedy generation, and re-runs the prompt with its last byte changed
checks.py, figures.py  report-specific checks and drawings
explore.py    what the explorer ships as data (every layer's attention and output, axis labels)
templates/    explain.md.j2, inputs.md.j2, questions.md.j2
"""

from generator.catalogue import Report
from generator.reports.gpt import catalogue, checks, figures
from generator.reports.gpt.explore import EXPLORATION
from generator.reports.gpt.options import GPTOptions

REPORT = Report.from_catalogue(
    catalogue,
    checks=checks.CHECKS,  # the report's own checks and drawings, beside the generic ones
    drawings=figures.DRAWINGS,
    key="gpt",
    title="Decoder-only GPT (byte level)",
    short_title="GPT",
    label_format="G{n:02d}",
    options=GPTOptions,
    package=__name__,
    exploration=EXPLORATION,
    variables_from="forward-pass code",  # no seed report: the names a nanoGPT-style forward pass uses
)
