"""Driver (ours, not upstream): Jamie-Stirling/RetNet's `RetNet` (`retnet.py`, `retention.py`,
`xpos_relative_position.py`), a **Retentive Network** decoder in its parallel form: per head (one `SimpleRetention`
module each, raw parameter matrices W_Q, W_K, W_V of their own), queries and keys rotated and scaled by **xPos**
(queries scaled up with the position, keys down), **retention instead of attention**: `(Q·Kᵀ) ⊙ D`, D a causal
**decay matrix** (γ^(n−m) where n ≥ m, 0 above the diagonal, one γ per head), no softmax and no 1/√d, times V; the
heads concatenated, a **GroupNorm** per head, a **swish gate** `swish(X·W_G) ⊙ Y`, the output matrix W_O; pre-norm
residual blocks with a GELU MLP in an `nn.Sequential`.

Upstream's model reads hidden states (B, T, C) and returns hidden states: it has no token embedding and no
language-model head. The driver adds both (ours, marked G01, G02 and G26 here): an `nn.Embedding` of 50 tokens and an
untied `nn.Linear` head, nothing between the last block and the head (upstream has no final norm).

Tiny sizes (width 32, 4 heads of 8, MLP 64, 2 layers), seed 0, eval mode, one forward pass without gradients on two
sequences of 8 tokens.
Trace: python -m transformer_trace trace driver.py"""
import torch

from retnet import RetNet

torch.manual_seed(0)
embedding = torch.nn.Embedding(50, 32)
model = RetNet(layers=2, hidden_dim=32, ffn_size=64, heads=4)
head = torch.nn.Linear(32, 50)
model.eval()
ids = torch.randint(0, 50, (2, 8))  # BREAKPOINT G01
with torch.no_grad():
    tokens = embedding(ids)  # BREAKPOINT G02
    hidden = model(tokens)
    logits = head(hidden)  # BREAKPOINT G26
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
