"""Ours: one forward pass of AymanMahfuz27/modern_llm's `ModernDecoderLM` (`src/modern_llm/models/`: `transformer.py`,
`attention.py`, `layers.py`; the package's `config/` and its other model files only imported): a decoder-only LM with
**attention sinks** (two learned states projected by the layer's own K and V Linears and prepended to the keys and
values, their mask columns zeros), **grouped-query attention** (4 query heads, 2 key/value heads, `repeat_interleave`),
rotary positions applied to q (offset by the sinks) and k, RMSNorm (its own class), a SwiGLU MLP split from one fused
gate Linear, pre-norm blocks, a final RMSNorm and logits tied to the token embedding; the causal + padding mask built
as an additive bias with `finfo.min`. The attention takes its manual path (softmax in float32), as it must with sinks.
Untrained, eval mode, seed 0. Tiny sizes: vocabulary 64, width 32, 4 query heads of 8, 2 key/value heads, SwiGLU
hidden 64, 2 layers, 2 sinks; two sequences of 8 tokens. `initializer_range=0.2` (the config's own field; upstream's
0.02 leaves an untrained model's scores near zero): every Linear and the embedding drawn from N(0, 0.2).
Trace: python -m transformer_trace trace driver.py"""
import torch

from modern_llm.config.model_config import ModernLLMConfig
from modern_llm.models.transformer import ModernDecoderLM

torch.manual_seed(0)
config = ModernLLMConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, ffn_hidden_size=64, max_seq_len=16,
                         use_attention_sinks=True, num_attention_sinks=2, use_gqa=True, gqa_groups=2,
                         initializer_range=0.2, tie_embeddings=True)
model = ModernDecoderLM(config).eval()
ids = torch.randint(0, 64, (2, 8))  # BREAKPOINT G01
with torch.no_grad():
    logits = model(ids)["logits"]
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, -1, :4].tolist()])
