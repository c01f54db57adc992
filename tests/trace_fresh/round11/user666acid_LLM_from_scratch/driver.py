"""Driver (ours, not upstream): user666acid/LLM_from_scratch's Mistral (mistral_model/src/: a student's from-scratch
Mistral — token embeddings only, rotary embeddings with the pairs interleaved (even/odd channels written back into a
`zeros_like`), grouped-query attention (4 query heads sharing 2 key/value heads, expanded by `unsqueeze/expand/view`),
a sliding-window causal mask built as a (max_seq_len, max_seq_len) float table (`tril(ones) * (row - col <=
window_size)`) and applied as `== 0` then `masked_fill(-inf)`, scores divided by √hs on their own line, pre-norm
RMSNorm sums, a SwiGLU with biases computed in one expression, a KV cache returned beside the logits) at a tiny size
(width 32, 4 query heads and 2 key/value heads of 8, 2 layers, a vocabulary of 64, 16 positions, a window of 3 so that
the window cuts into 8 positions), weights as upstream initialises them (PyTorch's defaults, seed 0) with the RMSNorm
gains set to 1 + N(0, 0.1²) so that a gain left out shows, eval mode, a batch of two prompts of 8 token IDs, one forward
pass as upstream's `forward` runs it by default (`use_cache=True`, no cache yet).
Trace: python -m transformer_trace trace driver.py"""
import torch

from src.model.mistral import Mistral

torch.manual_seed(0)
model = Mistral(vocab_size=64, max_seq_len=16, emb_size=32, num_q_heads=4, num_kv_heads=2, head_size=8,
                num_layers=2, dropout=0.1, window_size=3).eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        if name.endswith("norm_1.weights") or name.endswith("norm_2.weights") or name == "norm.weights":
            parameter.copy_(1.0 + 0.1 * torch.randn_like(parameter))

tokens = torch.tensor([[5, 17, 9, 42, 3, 28, 11, 4], [2, 33, 20, 14, 6, 49, 5, 30]])  # BREAKPOINT G01
with torch.no_grad():
    logits, cache = model(tokens)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
