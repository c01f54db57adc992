"""Driver (ours, not upstream): the TransformerModel of pytorch/examples' word_language_model at a tiny size (ninp 32,
4 heads, nhid 64, 2 layers, a 256-token vocabulary), random weights (seed 0), one batch of two sequences of 6 tokens
laid out sequence-first (T, B) as upstream's batchify makes them, one forward pass in eval mode with the causal mask.
Trace: python -m transformer_trace trace driver.py"""
import torch

from model import TransformerModel

torch.manual_seed(0)
model = TransformerModel(ntoken=256, ninp=32, nhead=4, nhid=64, nlayers=2, dropout=0.2).eval()
src = torch.tensor([list(b"Hello!"), list(b"world.")]).t().contiguous()  # BREAKPOINT G01
with torch.no_grad():
    log_probs = model(src)
    probs = log_probs.exp()  # BREAKPOINT G27
print("next tokens", probs[-1].argmax(-1).tolist())
