"""Probe: exec/eval of code holding marker text, and marker text in string literals."""
import torch

code = "w = torch.ones(2) * 5  # trace: from_exec"
exec(code)
e = eval("torch.ones(1) + 1")
s = "y = 1  # trace: not_a_marker"
print("# BREAKPOINT S13 in a print")
y = w + e  # trace: y
print(y.tolist(), s)
