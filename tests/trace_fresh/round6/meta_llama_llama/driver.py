"""Driver (ours, not upstream): meta-llama/llama's Llama 2 model (llama/model.py: RMSNorm, rotary embeddings, separate
wq/wk/wv projections, a key/value cache the forward pass writes and reads, an additive -inf causal mask, SwiGLU
feed-forward, untied output layer) at a tiny size (width 32, 4 heads, 2 layers, a vocabulary of 64), random weights
(seed 0), a batch of two prompts of 8 token IDs, one forward pass from position 0 as llama's generate does for its
prompt, then the next-token probabilities.
fairscale is stubbed (fairscale/: one process). Upstream allocates its key/value cache with `.cuda()`; on a machine
without a GPU the driver makes `Tensor.cuda` return the tensor itself, so the cache stays on the CPU.
Trace: python -m transformer_trace trace driver.py"""
import torch

from llama.model import ModelArgs, Transformer

if not torch.cuda.is_available():
    torch.Tensor.cuda = lambda self, *args, **kwargs: self  # CPU only: keep upstream's cache on the CPU

torch.manual_seed(0)
args = ModelArgs(dim=32, n_layers=2, n_heads=4, vocab_size=64, multiple_of=16, max_batch_size=2, max_seq_len=16)
model = Transformer(args).eval()
tokens = torch.tensor([[1, 17, 9, 42, 5, 28, 11, 4], [1, 33, 20, 14, 6, 49, 2, 8]])  # BREAKPOINT G01
logits = model.forward(tokens, 0)
probs = torch.softmax(logits, dim=-1)  # BREAKPOINT G27
print("logits", tuple(logits.shape), "next tokens", probs[:, -1].argmax(-1).tolist())
