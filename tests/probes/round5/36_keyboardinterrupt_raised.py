"""Probe: the script raises KeyboardInterrupt itself (python: traceback, killed by SIGINT, status 130 / -2)."""
import torch

y = torch.ones(2)  # trace: y
raise KeyboardInterrupt
