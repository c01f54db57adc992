"""Ours: one forward pass of priyangkarghosh/tllm's `GPT` (`src/model/`), a learner's GPT-2 from scratch in the style of
"let's reproduce GPT-2" (a package of its own: `config.py`, `attention.py`, `mlp.py`, `model.py`): token and learned
position embeddings summed, pre-norm blocks `x = x + self.attn(self.ln1(x))`, `x = x + self.mlp(self.ln2(x))`, one fused
`c_attn` Linear split into q, k, v, each viewed (B, T, h, hs) and transposed, `F.scaled_dot_product_attention(...,
is_causal=True)`, heads merged by transpose, contiguous, view, `c_proj`; a GELU MLP (`c_fc`, `nn.GELU()`, `c_proj`); a
final LayerNorm and an `lm_head` tied to the token embedding. `forward` returns `(logits, loss)`.
Untrained, eval mode, seed 0. Tiny sizes: vocabulary 64, context 16, width 32, 4 heads of 8, MLP 128, 2 layers; two
sequences of 8 tokens. Run as upstream's `src/test_model.py` runs it (`from model import GPT, GPTConfig`, the package's
folder on sys.path).
Trace: python -m transformer_trace trace driver.py"""
import torch

from model import GPT, GPTConfig

torch.manual_seed(0)
model = GPT(GPTConfig(block_size=16, vocab_size=64, n_layer=2, n_head=4, n_embd=32)).eval()
ids = torch.randint(0, 64, (2, 8))  # BREAKPOINT G01
with torch.no_grad():
    logits, _ = model(ids)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, -1, :4].tolist()])
