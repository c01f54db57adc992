"""Probe: the script changes its working folder and writes a relative file (the trace's --out must not move)."""
import os
import torch

os.makedirs("sub", exist_ok=True)
os.chdir("sub")
y = torch.ones(2)  # trace: y
with open("written.txt", "w") as fh:
    fh.write("x")
print(os.path.basename(os.getcwd()))
