"""Driver (ours, not upstream): Karpathy's "Let's build GPT" lecture script `gpt.py`, run as it is, stopped after its
first forward pass. `gpt.py` trains when it is imported (hyperparameters, data and loop at module level, no
`__main__` guard), and its first forward pass is `estimate_loss()`'s first batch: eval mode, no gradients, 64
sequences of 256 characters. Its sizes cannot be changed without editing it, so this driver (1) shortens that first
batch (and its targets) to 2 sequences of 8 characters with a forward pre-hook on the model (the width 384, 6 heads of 64 and 6 blocks
stay upstream's), and (2) ends the script with SystemExit(0) once that forward pass has returned, before the
training loop. `input.txt` (tinyshakespeare) is upstream's, beside `gpt.py`; seed 1337 is upstream's.
Trace: python -m transformer_trace trace driver.py"""
import os

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

os.chdir(os.path.dirname(os.path.abspath(__file__)))  # gpt.py opens 'input.txt' relative to the working folder


def shorten(module, args):
    if type(module).__name__ == "GPTLanguageModel":
        return tuple(a[:2, :8].contiguous() if isinstance(a, torch.Tensor) else a for a in args)  # the inputs and the targets
    return None


def stop(module, args, output):
    if type(module).__name__ == "GPTLanguageModel":
        logits, _ = output
        print("logits", tuple(logits.shape), "next characters", logits[:, -1].argmax(-1).tolist())
        raise SystemExit(0)


register_module_forward_pre_hook(shorten)
register_module_forward_hook(stop)
import gpt  # noqa: E402,F401  (runs the script: its first forward pass is the traced one)
