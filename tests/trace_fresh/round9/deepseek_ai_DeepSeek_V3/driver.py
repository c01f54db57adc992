"""Driver (ours, not upstream): deepseek-ai/DeepSeek-V3's inference model (inference/model.py: a decoder with
Multi-head Latent Attention — the keys and values made from one low-rank latent (wkv_a, an RMSNorm, wkv_b), each head's
query and key a part without positions (8 features) joined to a rotary part (4 features; the key's rotary part one for
all heads), values of another head size (8) than the queries and keys (12), the keys and values written into a cache and
read back, scores laid out (B, T, h, T) by einsum —, RMSNorm by F.rms_norm, its own Linear class (F.linear on a raw
parameter), a mixture-of-experts feed-forward (a softmax gate picking 2 of 4 SwiGLU experts per token, plus one shared
expert), pre-norm blocks written `x = x + self.attn(self.attn_norm(x), ...)`, an additive -inf mask, and logits of the
last position only) at a tiny size (width 32, 4 heads, 2 layers, both mixture-of-experts (n_dense_layers=0), latent
rank 16, expert width 16, a vocabulary of 64, 16 positions so no YaRN scaling), weights drawn from a normal
distribution (seed 0; upstream loads a converted checkpoint in bfloat16 or fp8; here the model is cast to float32 so it
runs on the CPU), the module's `attn_impl` set to "naive" (upstream's own option: Q, K and V per head exist as
tensors; its default "absorb" folds wkv_b into the queries and never forms K or V), a batch of two prompts of 8 token
IDs, one forward pass.
kernel.py (upstream, imported by model.py; its triton kernels only run for fp8 weights, never here).
Trace: python -m transformer_trace trace driver.py"""
import torch

import model as deepseek

deepseek.attn_impl = "naive"
torch.manual_seed(0)
args = deepseek.ModelArgs(max_batch_size=2, max_seq_len=16, vocab_size=64, dim=32, inter_dim=64, moe_inter_dim=16,
                          n_layers=2, n_dense_layers=0, n_heads=4, n_routed_experts=4, n_shared_experts=1,
                          n_activated_experts=2, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
                          v_head_dim=8, original_seq_len=16)
model = deepseek.Transformer(args).float().eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        parameter.normal_(0.0, 0.1)
        if "norm" in name and name.endswith("weight"):
            parameter.add_(1.0)

tokens = torch.tensor([[2, 17, 9, 42, 3, 28, 11, 4], [2, 33, 20, 14, 6, 49, 5, 30]])  # BREAKPOINT G01
logits = model(tokens)
print("logits", tuple(logits.shape), "next tokens", logits.argmax(-1).tolist())
