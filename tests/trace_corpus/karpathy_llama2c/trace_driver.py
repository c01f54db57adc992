"""Driver (ours, not upstream): llama2.c's Llama-2 model at a tiny size (dim 32, 2 layers, 4 heads, context 16 > T),
random weights, a batch of two 6-byte prompts with targets (so the output head runs on every position), one forward
pass in eval mode. Its manual attention ADDS a float mask (0 on and below the diagonal, -inf above: a registered
buffer of the context size, sliced to T) to the scores; the model takes that path where PyTorch has no
F.scaled_dot_product_attention, so the function is hidden while the model is built (the model prints a warning).
RMSNorm, rotary positions (nothing is added to the embeddings) and a SwiGLU feed-forward are left unmarked.
Trace: python -m transformer_trace trace trace_driver.py"""
import torch
import torch.nn.functional as F

from model import ModelArgs, Transformer

torch.manual_seed(0)
flash = F.scaled_dot_product_attention
del F.scaled_dot_product_attention  # upstream's switch: its manual attention, with the additive mask
try:
    model = Transformer(ModelArgs(dim=32, n_layers=2, n_heads=4, vocab_size=256, multiple_of=16, max_seq_len=16)).eval()
finally:
    F.scaled_dot_product_attention = flash
ids = torch.tensor([list(b"Hello!"), list(b"world.")])  # BREAKPOINT G01
with torch.no_grad():
    logits = model(ids, targets=torch.roll(ids, -1, dims=1))
    probs = logits.softmax(-1)  # BREAKPOINT G27
print("loss", float(model.last_loss))
