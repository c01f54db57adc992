"""Driver (ours, not upstream): devjwsong's pre-norm Transformer translator at a tiny size, random weights (seed 0),
one forward pass in eval mode. Upstream reads every size from `constants.py` (`from constants import *` in
`layers.py` and `transformer.py`); the driver sets them on that module before importing the model: d_model 32,
4 heads of 8, d_ff 64, 2 + 2 layers, seq_len 8 (the positional table is added whole, so every sentence is padded to
seq_len, as upstream's data loader pads it). Two source sentences of 8 tokens (the second ends in two padding tokens,
ID 0), two targets of 8 (the second ends in one); the masks are built as upstream's `Manager.make_mask` builds them
(copied here: `main.py` imports sentencepiece and the data pipeline).
Trace: python -m transformer_trace trace driver.py"""
import torch

import constants

constants.d_model, constants.num_heads, constants.d_k, constants.d_ff = 32, 4, 8, 64
constants.num_layers, constants.seq_len, constants.device = 2, 8, torch.device("cpu")

from transformer import Transformer  # noqa: E402  (after the sizes are set)

torch.manual_seed(0)
model = Transformer(src_vocab_size=20, trg_vocab_size=24).eval()
src_input = torch.tensor([[5, 9, 3, 14, 7, 2, 11, 4], [8, 4, 12, 6, 3, 17, 0, 0]])  # Snapshot #1
trg_input = torch.tensor([[1, 6, 13, 4, 2, 21, 9, 3], [1, 9, 5, 15, 2, 7, 18, 0]])  # Snapshot #2

e_mask = (src_input != constants.pad_id).unsqueeze(1)  # (B, 1, L)
d_mask = (trg_input != constants.pad_id).unsqueeze(1)  # (B, 1, L)
nopeak_mask = torch.ones([1, constants.seq_len, constants.seq_len], dtype=torch.bool)  # (1, L, L)
nopeak_mask = torch.tril(nopeak_mask)  # Snapshot #25
d_mask = d_mask & nopeak_mask  # (B, L, L) padding false
with torch.no_grad():
    output = model(src_input, trg_input, e_mask, d_mask)  # log-probabilities (B, L, V)
print("next tokens", output.argmax(-1).tolist())
