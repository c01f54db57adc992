"""The encoder–decoder report (seed report 001): everything specific to it lives in this folder.

catalogue.py  snapshots, stages, figures, questions     options.py  command-line options and validation
runner.py     builds the model and records a pass      checks.py, figures.py  report-specific checks and drawings
explore.py    what the explorer ships as data (every layer's attention and output, axis labels)
templates/    explain.md.j2, inputs.md.j2, questions.md.j2
"""

from generator.catalogue import Report
from generator.reports.encoder_decoder import catalogue
from generator.reports.encoder_decoder.explore import EXPLORATION
from generator.reports.encoder_decoder.options import EncoderDecoderOptions

REPORT = Report.from_catalogue(
    catalogue,
    key="encoder-decoder",
    title="Encoder–decoder Transformer",
    short_title="Encoder–decoder",
    label_format="#{n}",
    options=EncoderDecoderOptions,
    package=__name__,
    exploration=EXPLORATION,
)
