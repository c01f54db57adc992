"""Driver (ours, not upstream): dwzhang00/Offline-translation's Chinese-English translator, built as its run.py builds
it (`Transformer(Encoder(..., EncoderLayer(d_model, c(attn), c(ff), dropout), N), Decoder(..., DecoderLayer(d_model,
c(attn), c(attn), c(ff), dropout), N))`): raw `nn.Embedding` lookups (no sqrt(C) scale), a sinusoid table read through
`linger.quant_tensor` (stubbed: the table as it is), pre-norm `SublayerConnection`s called with lambdas, one
`MultiHeadedAttention` class whose `attention` function folds the heads into the batch for `torch.bmm` and back
(scores * 1/sqrt(d_k), `mask == False` filled with -1e9), a ReLU FFN, final LayerNorms and a generator returning
log-probabilities. Masks as its prepare_data.py builds them (padding `unsqueeze(-2)`, the target's & `subsequent_mask`).

Tiny sizes: vocabularies 40 / 45, width 32, 4 heads of 8, FFN 64, 2 layers each; seed 0, eval mode, one forward pass
without gradients on 2 source sentences of 7 tokens and 2 target sentences of 5 (no padding).
Trace: python -m transformer_trace trace driver.py"""
import copy

import torch

from model.attention import MultiHeadedAttention
from model.decoder import Decoder, DecoderLayer
from model.encoder import Encoder, EncoderLayer
from model.position_wise_feedforward import PositionwiseFeedForward
from model.transformer import Transformer
from utils import subsequent_mask

torch.manual_seed(0)
c = copy.deepcopy
attn = MultiHeadedAttention(4, 32, 0.1)
ff = PositionwiseFeedForward(32, 64, 0.1)
model = Transformer(Encoder(40, 32, 0.1, EncoderLayer(32, c(attn), c(ff), 0.1), 2),
                    Decoder(45, 32, 0.1, DecoderLayer(32, c(attn), c(attn), c(ff), 0.1), 2))
model.eval()
src = torch.randint(2, 40, (2, 7))  # Snapshot #1
tgt = torch.randint(2, 45, (2, 5))  # Snapshot #2
src_mask = (src != 1).unsqueeze(-2)
tgt_mask = (tgt != 1).unsqueeze(-2) & subsequent_mask(tgt.size(-1)).type_as(src_mask)  # Snapshot #25
with torch.no_grad():
    log_probs = model(src, tgt, src_mask, tgt_mask)
print("log_probs", tuple(log_probs.shape), round(float(log_probs.sum()), 6))
