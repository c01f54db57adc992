"""Probe: a SIGUSR1 handler the script installs, with a marked line inside it, and signal.alarm."""
import os
import signal
import torch

hits = []


def handler(signum, frame):
    z = torch.ones(2) * signum  # trace: z
    hits.append(signum)


signal.signal(signal.SIGUSR1, handler)
os.kill(os.getpid(), signal.SIGUSR1)
y = torch.ones(1)  # trace: y
print("hits", hits, "handler is ours:", signal.getsignal(signal.SIGUSR1) is handler)
