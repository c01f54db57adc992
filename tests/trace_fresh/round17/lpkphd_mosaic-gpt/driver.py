"""Driver (ours, not upstream): lpkphd/mosaic-gpt's `MosaicGPT` (`mosaic/model.py`), a decoder whose every component
is chosen by its config, here as upstream's default config chooses them: **multi-head latent attention** (DeepSeek-V2's
MLA: queries and keys/values projected down to low-rank latents and back up, a **decoupled rotary part** of 4 features
concatenated to each query and key, so that Q and K are 12 wide and V 8, the scores scaled by 1/√(d_head + rope_dim)),
an additive −inf `triu` causal mask, a **mixture-of-experts SwiGLU MLP** (a router picks the top 2 of 4 experts per
token, their outputs weighted by a softmax over the two logits, plus one shared expert always active), RMSNorm
pre-norm blocks, no position embeddings, logits from the tied embedding by `F.linear`.

Tiny sizes (width 32, 4 heads of 8, query latent 24, key/value latent 16, rotary part 4, 2 layers, 50 tokens, 16
positions; the SwiGLU width is upstream's rounding of 8/3 · 32 up to 256), seed 0, eval mode, one forward pass without
gradients on two sequences of 8 tokens. Upstream initialises every RMSNorm gain at 1: the driver draws them from
N(1, 0.1²) so that each norm's gain is its own, as after training.
Trace: python -m transformer_trace trace driver.py"""
import torch

from mosaic.config import AttentionConfig, FFNConfig, MosaicConfig, PositionConfig
from mosaic.model import MosaicGPT
from mosaic.norm.rmsnorm import RMSNorm

torch.manual_seed(0)
config = MosaicConfig(d_model=32, n_layers=2, vocab_size=50,
                      attention=AttentionConfig(type="mla", n_heads=4, kv_compression_dim=16, q_compression_dim=24,
                                                rope_dim=4),
                      ffn=FFNConfig(type="moe_swiglu", n_experts=4, top_k=2, shared_experts=1),
                      position=PositionConfig(max_seq_len=16))
model = MosaicGPT(config)
for module in model.modules():
    if isinstance(module, RMSNorm):
        torch.nn.init.normal_(module.weight, mean=1.0, std=0.1)
model.eval()
idx = torch.randint(0, 50, (2, 8))
with torch.no_grad():
    logits, _ = model(idx)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
