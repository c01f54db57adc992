"""Probe: __spec__, __package__, __loader__, __cached__, __builtins__ type and sys.path[0] of the script."""
import os
import sys
import torch

y = torch.ones(1)  # trace: y
print(__spec__, __package__, type(__loader__).__name__, "__cached__" in globals(), type(__builtins__).__name__)
print(os.path.basename(sys.path[0]) == os.path.basename(os.path.dirname(os.path.abspath(__file__))))
print(__doc__ is None)
