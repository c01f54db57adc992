"""Probe: student files named like standard modules the tracer may use (csv, html, shlex, zipfile, textwrap) beside the script."""
import csv
import html
import torch

y = torch.ones(2)  # trace: y
print(csv.WHO, html.WHO)
raise ValueError("script's own error")
