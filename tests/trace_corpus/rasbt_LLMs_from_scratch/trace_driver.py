"""Driver (ours, not upstream): the book's GPTModel (chapter 4) at a tiny size (2 layers, 4 heads, emb_dim 32,
context 16 > T), random weights, a batch of two 6-token prompts, one forward pass in eval mode. gpt.py imports tiktoken
for its data loader and demo, neither of which runs here: where it is not installed an empty stand-in module is
registered first. Trace: python -m transformer_trace trace trace_driver.py"""
import importlib.util
import sys
import types

import torch

# (not in sys.modules: a benchmark runs the driver again in one process, its stand-in already there)
if "tiktoken" not in sys.modules and importlib.util.find_spec("tiktoken") is None:
    sys.modules["tiktoken"] = types.ModuleType("tiktoken")

from gpt import GPTModel  # noqa: E402

torch.manual_seed(0)
config = {"vocab_size": 256, "context_length": 16, "emb_dim": 32, "n_heads": 4, "n_layers": 2, "drop_rate": 0.1,
          "qkv_bias": False}
model = GPTModel(config).eval()
ids = torch.tensor([list(b"Hello!"), list(b"world.")])  # BREAKPOINT G01
with torch.no_grad():
    logits = model(ids)
    probs = logits.softmax(-1)  # BREAKPOINT G27
print("next bytes", probs[:, -1].argmax(-1).tolist())
