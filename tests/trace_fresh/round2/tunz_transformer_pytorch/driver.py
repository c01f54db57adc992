"""Driver (ours, not upstream): tunz's pre-norm Transformer at a tiny size (width 32, 8 heads as upstream fixes them,
filter 64, 2 + 2 layers, vocabularies of 20 shared as upstream's default), random weights (seed 0), a batch of two
source sentences of 7 tokens (the second ends in one padding token, ID 0) and two targets of 5, one forward pass in
eval mode. Upstream's `Transformer.forward` builds its target mask as uint8, which `masked_fill_` refuses since
PyTorch 1.x: the driver runs the same three steps as `forward` (pad masks, `encode`, `decode`) with that mask as bool.
Trace: python -m transformer_trace trace driver.py"""
import torch

from model.transformer import Transformer
from utils import utils

torch.manual_seed(0)
model = Transformer(i_vocab_size=20, t_vocab_size=20, n_layers=2, hidden_size=32, filter_size=64, dropout_rate=0.1,
                    src_pad_idx=0, trg_pad_idx=0).eval()
inputs = torch.tensor([[5, 9, 3, 14, 7, 2, 11], [8, 4, 12, 6, 3, 17, 0]])  # Snapshot #1
targets = torch.tensor([[1, 6, 13, 4, 2], [1, 9, 5, 15, 2]])  # Snapshot #2
with torch.no_grad():
    i_mask = utils.create_pad_mask(inputs, model.src_pad_idx)
    enc_output = model.encode(inputs, i_mask)
    t_mask = utils.create_pad_mask(targets, model.trg_pad_idx)
    t_self_mask = utils.create_trg_self_mask(targets.size()[1], device=targets.device).bool()
    logits = model.decode(targets, enc_output, i_mask, t_self_mask, t_mask)
print("next tokens", logits.argmax(-1).tolist())
