"""Driver (ours, not upstream): gangasingh7058/Learned-Attention's `Transformer` (`src/model.py`, `src/model_args.py`),
a decoder-only model whose every layer (`ProcessWithLearnedMask`) first predicts a **learned soft attention mask**
(`PredictMask`: a pre-norm causal self-attention of its own, a residual, `Linear(d_model, max_Seq_len)` sliced to the
sequence length, `sigmoid(20 * m)`), then runs **two pre-norm sub-blocks** (attention + SwiGLU FFN each) whose causal
attention multiplies its softmax weights by that soft mask and renormalises them (`/ (sum + 1e-6)`); one `Attention`
class serves all three attentions of a layer. Complex rotary positions (base 1000) on q and k, RMSNorm, no absolute
positions, tied output projection.

Tiny sizes: vocabulary 50, width 32, 4 heads of 8, 2 layers, `max_Seq_len` 16, SwiGLU width 96 (upstream's rounding
to `multiple_of` 32); seed 0, eval mode, one forward pass without gradients on 2 sequences of 10 tokens.
Trace: python -m transformer_trace trace driver.py"""
import torch

from model import Transformer
from model_args import ModelArgs

torch.manual_seed(0)
args = ModelArgs(d_model=32, vocab_size=50, max_Seq_len=16, n_layers=2, n_heads=4, dropout=0.1, device="cpu")
model = Transformer(args)
model.eval()
ids = torch.randint(0, 50, (2, 10))  # BREAKPOINT G01
with torch.no_grad():
    logits = model(ids)
print("logits", tuple(logits.shape), round(float(logits.sum()), 6))
