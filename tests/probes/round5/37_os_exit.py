"""Probe: os._exit(5) after a capture, stdout flushed first (python: status 5, no atexit)."""
import os
import sys
import torch

y = torch.ones(2)  # trace: y
print("flushed")
sys.stdout.flush()
os._exit(5)
