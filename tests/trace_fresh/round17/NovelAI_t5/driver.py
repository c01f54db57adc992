"""Driver (ours, not upstream): NovelAI/t5's `T5` (`nai_t5/t5.py`), an encoder–decoder built to run Google's T5 v1.1
checkpoints: **T5's relative position bias** (a learned table of log-spaced buckets of the key − query distance,
bidirectional in the encoder, causal in the decoder, one table per stack shared by its layers) added as a float mask
to `F.scaled_dot_product_attention`, the decoder's causal mask folded into that bias (`bias.where(mask, −10000)`),
**no 1/√d scale** (`scale_qk=False`, as Google's checkpoints, whose scale is folded into the weights, need),
**the residual sums fused into the RMSNorms** (each norm takes the sublayer output and the residual stream and returns
the normalised sum and the new stream: a block's input is never a tensor of its own), a fused q/k/v projection and a
fused k/v projection in the cross-attention split by einops, a **GEGLU** MLP, no bias anywhere, decoder tokens looked up
in the encoder's embedding, an untied language-model head.

Tiny sizes (width 32, 4 heads of 8, GEGLU width 64, 2 layers per stack, 50 tokens, 8 relative-position buckets up to
distance 16), dropout 0, seed 0, eval mode, one forward pass without gradients on two source sequences of 8 tokens and
two target sequences of 6 (a padding mask of ones passed for the decoder). Upstream's RMSNorm gains start at 1: the driver draws them from N(1, 0.1²).
Stubs (ours): `pydantic` (`T5Config` is a `BaseModel`), `einops` (the shared stand-in).
Trace: python -m transformer_trace trace driver.py"""
import torch

from nai_t5 import T5, T5Config
from nai_t5.t5_common import RMSNormCast

torch.manual_seed(0)
config = T5Config(vocab_size=50, hidden_dim=32, num_layers=2, n_head=4, kv_heads=4, head_dim=8, ff_dim=64,
                  dropout=0.0, scale_qk=False, relative_attention_num_buckets=8, relative_attention_max_distance=16)
model = T5(config)
for module in model.modules():
    if isinstance(module, RMSNormCast):
        torch.nn.init.normal_(module.weight, mean=1.0, std=0.1)
model.eval()
source = torch.randint(1, 50, (2, 8))
target = torch.randint(1, 50, (2, 6))
with torch.no_grad():
    # every target token visible to the padding mask (upstream's default mask, (1, T), fails its own assertion for B = 2)
    logits = model(source, target, decoder_input_mask=torch.ones(2, 6, dtype=torch.bool))
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
