"""Driver (ours, not upstream): mtanghu/LEAP's `FastformerForCausalLM` (`src/leap/fastformerLM/fastformer.py`), the
author's causal adaptation of **Fastformer's additive attention** (Wu et al. 2021): no query–key score matrix at all.
Per head, each position's normalised query is scored against one learned vector ("strong scaling": / head size × 15),
exponentiated, and the queries are pooled by a **windowed cumulative sum** (the sum up to the position minus the sum
before its window, divided by the same windowed sum of the weights: a causal softmax-weighted average over the last w
positions); the pooled query multiplies the keys element-wise, those are pooled the same way with a second learned
vector, and the pooled key multiplies the values element-wise: that product is the attention's output (no output
projection). Local windows per layer (upstream's default: the first and last layers global, the others 2·2^i
positions), an additive padding mask (1 - mask) × -10000 of shape (B, T, 1), pre-norm blocks (the attention's
LayerNorm inside the attention module), learned absolute positions, a bias-free GELU MLP, a final LayerNorm and logits
tied to the token embedding.

Our `transformers/` stands in for Hugging Face's config and model base classes (the environment has none). Tiny sizes:
width 32, 4 heads of 8, vocabulary 50, 16 positions, 3 layers (windows 16, 4, 16), MLP 128; seed 0, eval mode, one
forward pass without gradients on two sequences of 12 tokens, no padding.
Trace: python -m transformer_trace trace driver.py"""
import torch

from fastformer import FastformerForCausalLM, FastformerLMConfig

torch.manual_seed(0)
config = FastformerLMConfig(hidden_size=32, vocab_size=50, n_heads=4, n_positions=16, n_layer=3)
model = FastformerForCausalLM(config)
model.eval()
ids = torch.randint(0, 50, (2, 12))  # BREAKPOINT G01
with torch.no_grad():
    logits = model(ids).logits
print("windows", config.window_sizes, "logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist(),
      "sum |logits|", round(float(logits.abs().sum()), 4))
