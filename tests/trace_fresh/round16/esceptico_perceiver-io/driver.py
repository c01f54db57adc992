"""Driver (ours, not upstream): esceptico/perceiver-io's `PerceiverLM` (its `examples/language_modelling.py`), an
encoder–decoder language model on **Perceiver IO**: the encoder's **cross-attention from a learned latent array to the
token + position embeddings** (one head, the latents as queries, pre-norm on both sides, the queries' residual), then
**self-attention blocks over the latents only** (pre-norm, GELU MLP; the list of blocks run `num_blocks` times with
shared weights); the decoder is **one cross-attention from the position embeddings (as queries) to the latents**,
without the queries' residual, then a Linear to the vocabulary. One `MultiHeadAttention` class serves all three
attentions (`attention @ values`, the scale `qk_head_dim ** -0.5`, heads split by `view` + `transpose(-3, -2)`).

Tiny sizes (embeddings and latents 32 wide, 6 latents, 4 self-attention heads of 8, 2 self-attention layers in one
block, 50 tokens, 16 positions), seed 0, eval mode, one forward pass without gradients on two sequences of 8 tokens,
no mask (upstream's mask path fills with `1 - attention_mask`, which needs a boolean it cannot be given).
The example's `PerceiverEncoder(..., cross_attn_head_dim=None, self_attn_head_dim=None)` no longer runs with the
package at this commit: `ExampleEncoder` (ours, below) drops the two arguments.
Trace: python -m transformer_trace trace driver.py"""
import torch

import language_modelling
from language_modelling import PerceiverLM
from perceiver_io import PerceiverEncoder


class ExampleEncoder(PerceiverEncoder):
    """Upstream's example passes `cross_attn_head_dim` and `self_attn_head_dim`, which the package's encoder dropped
    for `qk_out_dim` (commit e3bc9a0, "Flexible attention dims"); left as None they meant the default head sizes, so
    they are dropped here and the encoder built as the package builds it."""

    def __init__(self, *, cross_attn_head_dim=None, self_attn_head_dim=None, **kwargs):
        super().__init__(**kwargs)


language_modelling.PerceiverEncoder = ExampleEncoder
torch.manual_seed(0)
model = PerceiverLM(vocab_size=50, max_seq_len=16, embedding_dim=32, num_latents=6, latent_dim=32,
                    num_self_attn_heads=4, num_blocks=1, num_self_attn_per_block=2)
model.eval()
input_ids = torch.randint(0, 50, (2, 8))
with torch.no_grad():
    logits = model(input_ids)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
