"""Driver (ours, not upstream): Taha-codes/SLMs-from-Scratch's TinyStories `GPT` (`tinystories-dense-m3/model.py`), run
the way its training step runs it: `LitGPT._calculate_loss` builds the causal mask (`torch.tril` of ones, (1, 1, T, T),
1 = allowed) and hands it through `LitGPT.forward` to `GPT.forward`, every block and every attention (`mask == 0` filled
with -inf). Sinusoidal positions added by a module with dropout, pre-norm blocks written in five statements (`residual =
x` ... `x = x + residual`), separate W_q/W_k/W_v, a GELU FFN, a final LayerNorm and an untied head.

Tiny sizes: vocabulary 50, width 32, 4 heads of 8, FFN 128, 2 blocks, 16 positions; seed 0, eval mode (dropout off),
one forward pass without gradients on two sequences of 8 tokens (the loss of the next tokens is printed).
Trace: python -m transformer_trace trace driver.py"""
import torch

from model import GPT, LitGPT

torch.manual_seed(0)
gpt = GPT(vocab_size=50, d_model=32, n_heads=4, d_ff=128, seq_len=16, num_layers=2, dropout=0.1)
lit = LitGPT(gpt)
lit.eval()
ids = torch.randint(0, 50, (2, 8))  # BREAKPOINT G01
targets = torch.randint(0, 50, (2, 8))
with torch.no_grad():
    loss = lit._calculate_loss((ids, targets))
print("loss", round(float(loss), 6))
