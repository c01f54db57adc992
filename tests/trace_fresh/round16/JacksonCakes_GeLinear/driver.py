"""Driver (ours, not upstream): JacksonCakes/GeLinear's `GemmaForCausalLM` (`src/models/model.py`), a from-scratch
**Gemma 2** decoder (the model the repository distils into linear attention; its `train_attn` path is off here):
**sandwich norms** (RMSNorm with the gain 1 + w before *and after* each sublayer, `residual + post_norm(sublayer(
pre_norm(x)))`), **attention logits soft-capped** (`cap · tanh(q·kᵀ/√hs / cap)`) before an additive mask, **local
layers with a sliding window** (`triu(1 − w) · tril(w − 1)` of ones choosing between the causal mask and −2.38·10³⁸)
alternating with global ones, grouped-query attention (`repeat_interleave` of 2 key/value heads), rotary positions as
complex numbers, a GeGLU MLP (tanh GELU), token embeddings × √C, a final RMSNorm, logits from the tied embedding by
`F.linear`, **soft-capped as well** (`cap · tanh(z / cap)`).

Tiny sizes (width 32, 4 query heads and 2 key/value heads of 8, MLP 64, 2 layers: local then global, window 3, 50
tokens, 16 positions; the soft caps scaled down with the rest, 5 for the attention logits and 10 for the output, so
that the tanh bends the tiny model's values as Gemma 2's 50 and 30 bend its own), seed 0, eval mode, one forward pass
without gradients on two sequences of 8 tokens. Upstream initialises every RMSNorm gain w at 0 (a gain of exactly 1):
the driver draws them from N(0, 0.1²) so that each norm's gain is its own, as after training.
Stubs (ours): `accelerate`, `cut_cross_entropy` (imported by upstream for loading weights and its training loss, never
called) and `einops` (imported by upstream's chunked linear attention, not called).
Trace: python -m transformer_trace trace driver.py"""
import torch

from src.models.model import GemmaForCausalLM, RMSNorm
from src.models.model_config import GemmaConfig

torch.manual_seed(0)
config = GemmaConfig(vocab_size=50, max_position_embeddings=16, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, hidden_size=32, intermediate_size=64, head_dim=8, dtype="float32",
                     attention_type=["local", "global"], sliding_window_size=3, final_logit_softcapping=10.0,
                     attn_logit_softcapping=5.0)
model = GemmaForCausalLM(config)
for module in model.modules():
    if isinstance(module, RMSNorm):
        torch.nn.init.normal_(module.weight, std=0.1)
model.eval()
input_ids = torch.randint(1, 50, (2, 8))
with torch.no_grad():
    logits = model(input_ids)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
