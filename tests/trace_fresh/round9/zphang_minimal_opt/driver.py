"""Driver (ours, not upstream): zphang/minimal-opt's OPT (minimal_opt/model.py: a minimal re-implementation of Meta's
OPT decoder after Megatron/GPT-NeoX code — learned positions looked up with OPT's offset of 2, the stream transposed to
sequence-first (T, B, C) before the layers, pre-norm layers, separate q/k/v Linears reshaped to (T, B, h, hs), the
queries divided in place by sqrt(hs), scores by torch.baddbmm with the heads folded into the batch axis, a boolean
causal mask applied with masked_fill_ of float16's minimum, a ReLU MLP run on a (T*B, C) view, a final LayerNorm and an
untied logits layer) at a tiny size (width 32, 4 heads of 8, 2 layers, MLP 64, a vocabulary of 64, 16 positions),
weights drawn from a normal distribution (seed 0; upstream creates them uninitialised in float16 and loads Metaseq's
checkpoint; here the model is cast to float32 so it runs on the CPU), a batch of two prompts of 8 token IDs, one forward
pass without the cache.
Stub: tqdm/ (not installed here; imported by minimal_opt/generate.py).
Trace: python -m transformer_trace trace driver.py"""
import torch

import minimal_opt
from minimal_opt.model import OPTConfig

torch.manual_seed(0)
config = OPTConfig(vocab_size=64, hidden_size=32, max_position_embeddings=18, num_attention_heads=4, head_dim=8,
                   ffn_dim=64, num_hidden_layers=2)
model = minimal_opt.OPTModel(config, use_cache=False).float().eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        parameter.normal_(0.0, 0.1)
        if "layernorm" in name and name.endswith("weight"):
            parameter.add_(1.0)

tokens = torch.tensor([[2, 17, 9, 42, 3, 28, 11, 4], [2, 33, 20, 14, 6, 49, 5, 30]])  # BREAKPOINT G01
with torch.no_grad():
    logits = model(tokens)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
