"""The registry: the one place outside a report's own folder that names the reports.

A report is one folder here (see encoder_decoder/ for the layout) plus one model file in models/.
The CLI, the build, the landing page, the PDF export, the MkDocs plugin, the benchmarks and the tests
all iterate over ``REPORTS``, in this order.
"""

from __future__ import annotations

import importlib

from generator.catalogue import Report

PACKAGES = ("encoder_decoder", "vit", "gpt")  # folder names under generator/reports/, in site order

REPORTS: dict[str, Report] = {}
for _package in PACKAGES:
    _report = importlib.import_module(f"{__name__}.{_package}").REPORT
    REPORTS[_report.key] = _report
