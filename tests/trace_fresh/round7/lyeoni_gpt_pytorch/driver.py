"""Driver (ours, not upstream): lyeoni/gpt-pytorch's GPT-1 style decoder (model.py: learned token and position
embeddings, post-norm decoder layers with separate WQ/WK/WV projections, a boolean padding + causal mask filled with
-1e9, GELU feed-forward, a language-model head tied to the token embedding) at a tiny size (width 32, 4 heads,
2 layers, a vocabulary of 64), random weights (seed 0), a batch of two sequences of 8 token IDs (the second ends in
one padding token, ID 0, as the repository's data loader pads), one forward pass in eval mode, then the next-token
probabilities. No stubs.
Trace: python -m transformer_trace trace driver.py"""
import torch

from model import GPT, GPTLMHead

torch.manual_seed(0)
gpt = GPT(vocab_size=64, seq_len=16, d_model=32, n_layers=2, n_heads=4, d_ff=128, pad_id=0)
model = GPTLMHead(gpt).eval()
tokens = torch.tensor([[5, 17, 9, 42, 3, 28, 11, 4], [7, 33, 20, 14, 6, 49, 2, 0]])  # BREAKPOINT G01
with torch.no_grad():
    lm_logits = model(tokens)
probs = torch.softmax(lm_logits, dim=-1)  # BREAKPOINT G27
print("logits", tuple(lm_logits.shape), "next tokens", probs[:, -1].argmax(-1).tolist())
