"""Driver (ours, not upstream): graykode's GPT-2 at a tiny size (width 32, 2 blocks, 4 heads, a 256-token byte
vocabulary, context 16), random weights (seed 0), a batch of two prompts of 8 bytes, one forward pass in eval mode,
softmax of the logits. Trace: python -m transformer_trace trace driver.py"""
import torch

from GPT2.config import GPT2Config
from GPT2.model import GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(vocab_size_or_config_json_file=256, n_positions=16, n_ctx=16, n_embd=32, n_layer=2, n_head=4)
model = GPT2LMHeadModel(config).eval()
ids = torch.tensor([list(b"Hello, w"), list(b"the cat ")])  # BREAKPOINT G01
with torch.no_grad():
    logits, presents = model(ids)
    probs = logits.softmax(-1)  # BREAKPOINT G27
    next_probs = probs[0, -1]  # BREAKPOINT G28
print("next bytes", probs[:, -1].argmax(-1).tolist())
