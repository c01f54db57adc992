"""Driver (ours, not upstream): affjljoo3581/GPT2's GPT-2 (src/gpt2/modeling: pre-norm layers with separate
proj_q/proj_k/proj_v projections, a boolean padding + future mask added as -1e4, a Swish feed-forward in an
nn.Sequential, a final LayerNorm, logits from the transposed token embedding) built as the repository's
generate_sentences.py builds it (bidirectional=False), at a tiny size (width 32, 4 heads, 2 layers, a vocabulary of
64), random weights (seed 0), a batch of two sequences of 8 token IDs, one forward pass in eval mode (the model then
returns the logits and the key/value pasts), then the next-token probabilities.
The package is copied as upstream's src/gpt2 holds it (modeling/ and utils/fusing.py only; apex is not installed, so
fusing.py falls back to torch's LayerNorm as upstream intends). No stubs.
Trace: python -m transformer_trace trace driver.py"""
import torch

from gpt2.modeling import Transformer

torch.manual_seed(0)
model = Transformer(layers=2, pad_idx=0, words=64, seq_len=16, heads=4, dims=32, rate=4, dropout=0.1,
                    bidirectional=False).eval()
tokens = torch.tensor([[5, 17, 9, 42, 3, 28, 11, 4], [7, 33, 20, 14, 6, 49, 2, 8]])  # BREAKPOINT G01
with torch.no_grad():
    logits, past = model(tokens)
probs = torch.softmax(logits, dim=-1)  # BREAKPOINT G27
print("logits", tuple(logits.shape), "next tokens", probs[:, -1].argmax(-1).tolist())
