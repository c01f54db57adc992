"""Driver (ours, not upstream): augustwester/transformer-xl's `TransformerXL`, a decoder-only **Transformer-XL**:
no absolute positions, each layer's keys and values computed over **a memory of the previous segment's layer inputs
concatenated before the current segment** (`h = cat(mem, x)`), **relative positions**: the scores are
`(q + u)·kᵀ + shift((q + t)·rᵀ)`, r a projection of a flipped sinusoid table, the second term shifted per query row
by a circulant `gather`, then `tril(mem_len) / √hs` with the zeros set to −inf; post-norm layers (`LayerNorm(out + x)`),
a ReLU feed-forward in an `nn.Sequential`, an untied output layer with a bias.

Tiny sizes (width 32, 4 heads of 8, 2 layers, feed-forward 64, 50 tokens, segments of 8, memory of 4), seed 0, eval
mode, one forward pass without gradients on two sequences of 8 tokens. The memory is filled first, as an earlier
segment would have left it, with random layer inputs of 4 positions (`add_to_memory`, upstream's own method), so that
the traced pass reads keys and values over 4 + 8 positions; the trace reads the first forward pass, and a first
segment run through the model would be that pass, with an empty memory.
Trace: python -m transformer_trace trace driver.py"""
import torch

from model import TransformerXL

torch.manual_seed(0)
config = TransformerXL.default_config()
config.model_dim, config.embed_dim, config.num_heads = 32, 8, 4
config.inner_dim, config.num_layers, config.dropout = 64, 2, 0.0
config.seg_len, config.mem_len, config.vocab_size = 8, 4, 50
model = TransformerXL(config, torch.device("cpu"))
model.eval()
model.set_up_memory(2)
for layer in range(config.num_layers):
    model.add_to_memory(torch.randn(2, config.mem_len, config.model_dim), layer)
input_ids = torch.randint(0, 50, (2, 8))
with torch.no_grad():
    logits = model(input_ids)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
