"""Driver (ours, not upstream): rifath95/Causal-Linformer's `MyGPT` (`model.py`) with upstream's default attention, the
**causal blockwise Linformer**: per head, an exact **local branch** (softmax over the query itself and the 2 keys
before it, a sliding window of 3) **plus** a **global branch** whose keys and values are the completed blocks of 4
positions, each **compressed to one key and one value by learned per-head weights E and F** (einsum over the block),
each query attending (its own softmax, the same 1/√hs) only to the blocks complete at its position, rows with no
complete block zeroed; the two branches' outputs **summed**. Learned absolute positions, pre-norm blocks, a ReLU MLP,
a final LayerNorm inside the head's line.

Our `config.py` and `data.py` stand in for upstream's (tiny sizes; the vocabulary size without reading the text).
Upstream initialises E and F to 1/4 (a plain average of each block, the start of training); the driver draws them
from U(0, 0.5) instead, as a trained model's would differ per position. Width 32, 4 heads of 8, MLP 128, 2 layers, 65
tokens, 16 positions in 4 global blocks; seed 0, eval mode, one forward pass without gradients on two sequences of 12
tokens (3 completed blocks).
Trace: python -m transformer_trace trace driver.py"""
import torch

from data import vocab_size
from model import MyGPT

torch.manual_seed(0)
gpt = MyGPT()
with torch.no_grad():
    for block in gpt.layers:
        block.attn.E.uniform_(0.0, 0.5)
        block.attn.F.uniform_(0.0, 0.5)
gpt.eval()
ids = torch.randint(0, vocab_size, (2, 12))  # BREAKPOINT G01
with torch.no_grad():
    logits = gpt(ids)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist(),
      "sum |logits|", round(float(logits.abs().sum()), 4))
