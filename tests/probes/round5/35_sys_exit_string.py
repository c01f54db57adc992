"""Probe: sys.exit("message") (python: message on stderr, exit 1)."""
import sys
import torch

y = torch.ones(2)  # trace: y
sys.exit("fatal: bad config")
