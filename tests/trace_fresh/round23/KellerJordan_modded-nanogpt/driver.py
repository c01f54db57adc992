"""Ours: one forward pass of the GPT of KellerJordan/modded-nanogpt's record "2024-10-14_ModernArch"
(`records/track_1_short/2024-10-14_ModernArch/train_gpt2.py`, the speedrun's first "modern architecture": a nanoGPT
whose blocks normalise with the **functional, weightless** `F.rms_norm(x, (C,))` inside the residual lines
(`x = x + self.attn(F.rms_norm(x, (x.size(-1),)))`), q, k and v from three bias-free Linears viewed (B, T, h, hs),
**rotary positions** (halves paired, the cos/sin tables cached in **bfloat16**), then **QK-norm** (`F.rms_norm` over
each head of q and k, no weight), `F.scaled_dot_product_attention(..., is_causal=True)` on the heads-first
transposes (so the scale 1/sqrt(hs) is applied to unit-RMS q and k), a **ReLU² MLP** (`F.relu(x).square()`), a final
weightless RMS norm, logits tied to the token embedding, and on the inference path the logits of the **last position
only** (`self.lm_head(x[:, [-1], :])`, then `.float()`).
The file is upstream's whole training script: at import it defines the model, then stops at its own
`assert torch.cuda.is_available()` (the distributed training that follows needs 8 GPUs); the driver catches that
AssertionError and takes the classes from the module's globals (the frame the assertion stopped in). Upstream
initialises both output projections (`c_proj`) to zero, which makes an untrained block the identity: the driver
re-draws them as PyTorch draws any Linear (`reset_parameters()`). Run in float32 on the CPU (upstream runs under a CUDA
bfloat16 autocast). Untrained, eval mode, seed 0. Tiny sizes: vocabulary 64, width 32, 4 heads of 8, MLP 128,
2 layers; two sequences of 8 tokens.
Trace: python -m transformer_trace trace driver.py"""
import sys

import torch

try:
    import train_gpt2  # noqa: F401  (stops at upstream's `assert torch.cuda.is_available()`)
except AssertionError as stop:
    frame = stop.__traceback__
    while frame.tb_next is not None and not frame.tb_frame.f_code.co_filename.endswith("train_gpt2.py"):
        frame = frame.tb_next
    upstream = frame.tb_frame.f_globals
else:
    upstream = vars(sys.modules["train_gpt2"])
GPT, GPTConfig = upstream["GPT"], upstream["GPTConfig"]

torch.manual_seed(0)
model = GPT(GPTConfig(vocab_size=64, n_layer=2, n_head=4, n_embd=32)).eval()
for block in model.transformer.h:
    block.attn.c_proj.reset_parameters()
    block.mlp.c_proj.reset_parameters()
ids = torch.randint(0, 64, (2, 8))  # BREAKPOINT G01
with torch.no_grad():
    logits, _ = model(ids)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, -1, :4].tolist()])
