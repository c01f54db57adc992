"""The registry: the one place outside a report's own folder that names the reports.

A report is one folder here (see encoder_decoder/ for the layout) plus one model file in models/.
The CLI, the build, the landing page, the PDF export, the MkDocs plugin, the benchmarks and the tests
all iterate over ``REPORTS``, in this order.
"""

from __future__ import annotations

import importlib

from generator.catalogue import Report

PACKAGES = ("encoder_decoder", "vit", "gpt", "toy_vit")  # folder names under generator/reports/, in site order

REPORTS: dict[str, Report] = {}
for _package in PACKAGES:
    _report = importlib.import_module(f"{__name__}.{_package}").REPORT
    REPORTS[_report.key] = _report


def training(key: str):
    """The report's training module (``generator/reports/<report>/training.py``: ``main(steps, out, seed, quiet)``
    trains its model and writes a checkpoint and its record), or None when the report has no training recipe."""
    import importlib.util

    name = f"{REPORTS[key].package}.training"
    return importlib.import_module(name) if importlib.util.find_spec(name) else None


def trainable() -> list[str]:
    """Keys of the reports whose model can be trained with `python -m generator train <report>`."""
    return [key for key in REPORTS if training(key)]
