"""Driver (ours, not upstream): rato-tokyo/new-llm's Pythia (pythia.py = src/models/pythia.py of commit 66b04b2c: a
re-implementation of EleutherAI's Pythia-70M, a GPT-NeoX decoder — one fused query_key_value Linear viewed per head as
(B, T, h, 3·hs) and chunked into q, k and v, rotary embeddings on the first 25 % of each head's features, a boolean
causal mask filled with -inf, a parallel block: attention and GELU MLP both read one LayerNorm of the block input and
are added to the residual in one sum, a final LayerNorm and an untied logits layer) at a tiny size (width 64, 4 heads of
16 — 4 rotary features each —, 2 layers, MLP 128, a vocabulary of 64, 32 positions), weights drawn from a normal
distribution (seed 0; LayerNorm gains 1 + N(0, 0.1²)), eval mode, a batch of two prompts of 8 token IDs, one forward
pass.
Trace: python -m transformer_trace trace driver.py"""
import torch

from pythia import PythiaModel

torch.manual_seed(0)
model = PythiaModel(vocab_size=64, hidden_size=64, num_layers=2, num_heads=4, intermediate_size=128,
                    max_position_embeddings=32, rotary_pct=0.25).eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        parameter.normal_(0.0, 0.1)
        if ("layernorm" in name or "layer_norm" in name) and name.endswith("weight"):
            parameter.add_(1.0)

tokens = torch.tensor([[5, 17, 9, 42, 3, 28, 11, 4], [2, 33, 20, 14, 6, 49, 5, 30]])  # BREAKPOINT G01
with torch.no_grad():
    logits = model(tokens)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
