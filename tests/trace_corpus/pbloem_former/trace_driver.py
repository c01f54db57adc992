"""Driver (ours, not upstream): former's GTransformer (the generating transformer of Peter Bloem's "Transformers from
scratch") at a tiny size (2 blocks, 4 heads, emb 32, context 16 > T), random weights, a batch of two 6-byte prompts,
one forward pass in eval mode. former.util imports tqdm and TensorBoard's SummaryWriter for its training scripts, which
do not run here: where those are not installed, empty stand-in modules are registered first.
Trace: python -m transformer_trace trace trace_driver.py"""
import importlib.util
import sys
import types

import torch

# (not in sys.modules: a benchmark runs the driver again in one process, its stand-in already there)
if "tqdm" not in sys.modules and importlib.util.find_spec("tqdm") is None:
    sys.modules["tqdm"] = types.ModuleType("tqdm")
if "tensorboard" not in sys.modules and importlib.util.find_spec("tensorboard") is None:
    sys.modules["torch.utils.tensorboard"] = types.SimpleNamespace(SummaryWriter=None)

from former import GTransformer  # noqa: E402

torch.manual_seed(0)
model = GTransformer(emb=32, heads=4, depth=2, seq_length=16, num_tokens=256).eval()
ids = torch.tensor([list(b"Hello!"), list(b"world.")])  # BREAKPOINT G01
with torch.no_grad():
    log_probs = model(ids)
    probs = log_probs.exp()  # BREAKPOINT G27
print("next bytes", probs[:, -1].argmax(-1).tolist())
