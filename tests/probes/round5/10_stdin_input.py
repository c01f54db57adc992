"""Probe: the script reads stdin with input() and sys.stdin."""
import sys
import torch

# PROBE-STDIN: 3\nrest of line\n
n = int(input("n? "))
rest = sys.stdin.read()
y = torch.ones(n)  # trace: y
print("n", n, "rest", repr(rest))
