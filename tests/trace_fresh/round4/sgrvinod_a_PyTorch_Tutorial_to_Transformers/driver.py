"""Driver (ours, not upstream): sgrvinod's "a PyTorch Tutorial to Transformers" Transformer (model.py) at a tiny size
(d_model 32, 4 heads of 8, d_inner 64, 2 + 2 layers, a shared vocabulary of 40), random weights (upstream's
init_weights: Xavier, the embedding shared with the decoder's output layer; seed 0), a batch of two source sentences of
8 tokens (true lengths 8 and 6, padded with ID 0) and two targets of 7 (true lengths 7 and 5), one forward pass in eval
mode as upstream's train.py calls it: model(src, tgt, src_lengths, tgt_lengths). The positional table is built by
`get_positional_encoding`, copied from upstream's utils.py because that module imports wget and youtokentome.
Trace: python -m transformer_trace trace driver.py"""
import math

import torch

from model import Transformer


def get_positional_encoding(d_model, max_length=100):  # copied from upstream utils.py
    positional_encoding = torch.zeros((max_length, d_model))  # (max_length, d_model)
    for i in range(max_length):
        for j in range(d_model):
            if j % 2 == 0:
                positional_encoding[i, j] = math.sin(i / math.pow(10000, j / d_model))
            else:
                positional_encoding[i, j] = math.cos(i / math.pow(10000, (j - 1) / d_model))
    return positional_encoding.unsqueeze(0)  # (1, max_length, d_model)


torch.manual_seed(0)
model = Transformer(vocab_size=40, positional_encoding=get_positional_encoding(32, 20), d_model=32, n_heads=4,
                    d_queries=8, d_values=8, d_inner=64, n_layers=2, dropout=0.1).eval()
source = torch.tensor([[5, 9, 3, 14, 7, 2, 11, 4], [8, 4, 12, 6, 3, 17, 0, 0]])  # Snapshot #1
target = torch.tensor([[1, 6, 13, 4, 2, 21, 9], [1, 9, 5, 15, 2, 0, 0]])  # Snapshot #2
source_lengths = torch.tensor([8, 6])
target_lengths = torch.tensor([7, 5])
with torch.no_grad():
    logits = model(source, target, source_lengths, target_lengths)
print("next tokens", logits.argmax(-1).tolist())
