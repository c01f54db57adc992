"""Driver (ours, not upstream): Prasannajaga/transformers-playground's `src/customTransformers/` decoder with
`attention="MQA"` (a learner's playground package: the attention variants in `src/attention/` (MHA, GQA, **MQA**, rope,
KV cache), the feed-forward variants in `src/FFN/` picked from a registry, the blocks in `customTransformers/blocks.py`;
**multi-query attention**: per-head queries from `q_proj`, one key head and one value head of the head size
(`k_proj`, `v_proj` to 8 channels) unsqueezed to (B, 1, T, hs) and broadcast over the 4 query heads, scores × hs^-0.5,
−inf above the diagonal, a ReLU MLP in an `nn.Sequential`, pre-norm blocks, learned positions, a final LayerNorm, the
head tied to the token embeddings with a bias of its own) at a tiny size (width 32, 4 query heads of 8, 2 blocks, a
vocabulary of 64, 16 positions; upstream's `eval/config.py` as it is: dropout 0.1, a causal buffer of 256), upstream's
initialisation (normal(0, 0.02) for Linears and Embeddings; seed 0) with the LayerNorm gains and shifts set to
1 + N(0, 0.1²) and N(0, 0.1²) so that a gain or shift left out shows, eval mode, a batch of two prompts of 8 token IDs,
one forward pass without targets. Run from this folder (upstream's `src/` layout: `attention`, `FFN`, `eval` on the path).
Trace: python -m transformer_trace trace driver.py"""
import torch

from customTransformers.decodeTransfomer import DecodeTransformer

torch.manual_seed(0)
model = DecodeTransformer(num_layers=2, n_emb=32, n_head=4, vocab_size=64, block_size=16, dropout=0.1,
                          attention="MQA", ffn_type="relu").eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        if name.endswith(("ln1.weight", "ln2.weight", "final_norm.weight")):
            parameter.copy_(1.0 + 0.1 * torch.randn_like(parameter))
        elif name.endswith(("ln1.bias", "ln2.bias", "final_norm.bias")):
            parameter.copy_(0.1 * torch.randn_like(parameter))

tokens = torch.tensor([[5, 17, 9, 42, 3, 28, 11, 4], [2, 33, 20, 14, 6, 49, 5, 30]])  # BREAKPOINT G01
with torch.no_grad():
    logits, _ = model(tokens)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
