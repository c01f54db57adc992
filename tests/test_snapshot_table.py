"""`python -m transformer_trace list`: what a student can mark, from the catalogues, shown in the README as printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.snapshot_table import listing, read_table, table_of
from transformer_trace.trace import traceable

ROOT = Path(__file__).resolve().parent.parent


def test_the_table_is_the_catalogues_own():
    assert read_table() == table_of(REPORTS), "a catalogue changed: run python scripts/write_snapshot_table.py"


@pytest.mark.parametrize("key", list(traceable(REPORTS)))
def test_list_prints_every_snapshot_with_its_marker_variable_and_shape(key, capsys):
    assert main(["list", key]) == 0
    printed = capsys.readouterr().out.splitlines()
    report = REPORTS[key]
    for snap in report.snapshots:
        marker = report.trace.marker(snap.number, report.label(snap.number))
        row = next(line for line in printed if line.strip().startswith(f"{marker} "))
        assert snap.title in row and snap.variable in row and row.rstrip().endswith(")")
    assert "  shape letters:" in printed


def test_list_without_a_report_prints_every_catalogue(capsys):
    assert main(["list"]) == 0
    assert capsys.readouterr().out.splitlines() == listing(read_table())


def test_the_readmes_lines_are_what_list_prints(capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n\$ python -m transformer_trace list (\S+)\n(.*?)\n  \.\.\.\n```", readme, re.S)
    assert block, "the README shows list's first lines"
    assert main(["list", block.group(1)]) == 0
    shown = block.group(2).splitlines()
    assert capsys.readouterr().out.splitlines()[:len(shown)] == shown


def test_listing_imports_no_pytorch():
    """The command's own module reads a table: no catalogue, no model, no torch (measured with -X importtime)."""
    code = ("import sys; from transformer_trace.snapshot_table import list_command; import argparse; "
            "list_command(argparse.Namespace(report='gpt'))")
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0 and "G32" in done.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "json" in imported and not [name for name in imported if name.split(".")[0] in ("torch", "numpy")]
