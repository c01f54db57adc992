"""Probe: atexit handler writes a file and prints; then sys.exit(0)."""
import atexit
import sys
import torch


def bye():
    print("atexit ran")
    with open("atexit.txt", "w") as fh:
        fh.write("bye\n")


atexit.register(bye)
y = torch.ones(2)  # trace: y
sys.exit(0)
