"""Probe: output with no final newline and to stderr: ordering with the tool's own summary line."""
import sys
import torch

y = torch.ones(2)  # trace: y
sys.stdout.write("no newline at end")
sys.stderr.write("err no newline")
