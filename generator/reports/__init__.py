"""The registry: the one place outside a report's own folder that names the reports.

A report is one model file in models/ and one ``Report`` object (generator/catalogue.py), declared in its folder's
``__init__.py`` (see encoder_decoder/), registered here with one line. Only the entry points read ``REPORTS``: the CLI
(generator/cli.py, arguments.py), the MkDocs plugin (generator/site/plugin.py, docs_folder/configured.py), the
benchmarks and the tests; they hand the Report objects to the generic code (a run carries its own). Site order is
registration order.
"""

from __future__ import annotations

from transformer_trace.catalogue import Report
from transformer_trace.registry import Registry
from transformer_trace.report_parts import ReportError
from transformer_trace.reports import encoder_decoder, gpt, toy_vit, vit

REPORTS: Registry[Report] = Registry("report")


def register(report: Report, registry: Registry[Report] = REPORTS) -> Report:
    """Add ``report`` (a Report object from any importable package, checked when it was made) after the reports
    registered before it; a second report under a taken key is refused."""
    if not isinstance(report, Report):
        raise ReportError(f"register: a report must be a transformer_trace.catalogue.Report, got {report!r}")
    return registry.add(report.key, report)


register(encoder_decoder.REPORT)
register(vit.REPORT)
register(gpt.REPORT)
register(toy_vit.REPORT)


def trainable(reports: Registry[Report] = REPORTS) -> list[str]:
    """Keys of the reports whose model can be trained with `python -m transformer_trace train <report>`."""
    return [key for key, report in reports.items() if report.training is not None]
