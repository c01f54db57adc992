"""Probe: a package with relative imports; the marked line is in pkg/mod.py."""
from pkg.mod import run

print(run().tolist())
