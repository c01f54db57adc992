"""Probe: __file__, sys.argv and a file written beside the script through __file__."""
import os
import sys
import torch

# PROBE-ARGS: --epochs 1 "x y"
here = os.path.dirname(os.path.abspath(__file__))
print(os.path.basename(__file__), sys.argv[1:], os.path.basename(sys.argv[0]))
with open(os.path.join(here, "beside.txt"), "w") as fh:
    fh.write("ok")
y = torch.ones(2)  # trace: y
