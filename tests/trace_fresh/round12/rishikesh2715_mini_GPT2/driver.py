"""Driver (ours, not upstream): rishikesh2715/mini-GPT2's `model.py` (a student's GPT-2-style model trained on
Shakespeare: its own LayerNorm class (biased variance, eps 1e-5), a fused `c_attn` split by `chunk(3)`, the attention
by `F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_dropout.p, is_causal=True)`, an `nn.Sequential` MLP
(Linear-GELU-Linear-Dropout), pre-norm blocks in an `nn.Sequential`, learned positions from `arange(0, T)`, the head
tied to the token embeddings) at a tiny size (width 32, 4 heads of 8, 2 blocks, a vocabulary of 64, 16 positions),
upstream's own configuration otherwise (`dropout=0.1`, `bias=True`) and its own initialisation (normal(0, 0.02), seed 0)
with the LayerNorm gains set to 1 + N(0, 0.1²) so that a gain left out shows, eval mode, a batch of two prompts of 8 token
IDs, one forward pass without targets.
Trace: python -m transformer_trace trace driver.py"""
import torch

from model import GPT, GPTConfig

torch.manual_seed(0)
model = GPT(GPTConfig(block_size=16, vocab_size=64, n_layer=2, n_head=4, n_embd=32)).eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        if name.endswith(("ln1.weight", "ln2.weight", "ln_f.weight")):
            parameter.copy_(1.0 + 0.1 * torch.randn_like(parameter))

tokens = torch.tensor([[5, 17, 9, 42, 3, 28, 11, 4], [2, 33, 20, 14, 6, 49, 5, 30]])  # BREAKPOINT G01
with torch.no_grad():
    logits, _ = model(tokens)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
