"""Driver (ours, not upstream): koayon/ml-implementations' GPT-2 (`gpt/model.py`: learned token and position
embeddings, a final LayerNorm, logits tied to the token embedding by a named-axis einsum) with its blocks replaced by
the repository's `DeepNormBlock`s (`gpt/deepnorm_transformer_block.py`: post-norm, DeepNorm's `LayerNorm(x * alpha +
sublayer)` with alpha = (2 * num_layers) ** 0.25) holding its `GroupedQueryAttention` (`group_size=2`: 2 query groups
of 8, each repeated over 2 of the 4 heads, whose keys and values are full: one fused `kv_proj` split in two; einops
rearranges, `t.einsum` scores, a 4-D `tril(ones_like(scores))` mask, a fancy_einsum context). Upstream has no model
that uses the DeepNorm block: the block's own `__main__` builds it alone; GPT2's `blocks` is a plain ModuleList that
the driver refills.

Tiny sizes: vocabulary 50, width 32, 4 heads of 8, 2 layers, 16 positions, MLP 128; seed 0, eval mode, one forward
pass without gradients on 2 sequences of 10 tokens. Stubs (ours): fancy_einsum, joblib, pandas, tiktoken, jaxtyping,
tensorboardX, transformers (none computes anything the model runs but fancy_einsum's einsum); einops is
tests/stubs/einops.
Trace: python -m transformer_trace trace driver.py"""
import torch as t
from torch import nn

from gpt.config import GPTConfig
from gpt.deepnorm_transformer_block import DeepNormBlock
from gpt.model import GPT2

t.manual_seed(0)
config = GPTConfig(num_layers=2, num_heads=4, vocab_size=50, hidden_size=32, max_position_embeddings=16,
                   dropout=0.1)
model = GPT2(config, with_pretrained_weights=False)
model.blocks = nn.ModuleList([DeepNormBlock(layer_index=i, hidden_size=32, num_heads=4, dropout=0.1, group_size=2,
                                            num_layers=2) for i in range(2)])
model.eval()
ids = t.randint(0, 50, (2, 10))  # BREAKPOINT G01
with t.no_grad():
    logits, _cache = model(ids)
print("logits", tuple(logits.shape), round(float(logits.sum()), 6))
