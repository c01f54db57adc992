"""Stub (ours): upstream's parser.py parses the training script's command line and sets `args.device`; the model files
read only `args.device`. Here: the CPU, without parsing any command line."""
from types import SimpleNamespace

import torch

args = SimpleNamespace(device=torch.device("cpu"))
