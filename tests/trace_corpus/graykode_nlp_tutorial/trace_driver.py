"""Driver (ours, not upstream): graykode's Transformer tutorial at a tiny size (d_model 32, 2 layers, 4 heads of 8),
random weights, the tutorial's own sentences (a batch of two, the source padded with 'P'), one forward pass in eval
mode. The upstream script sets its sizes as module globals under `if __name__ == '__main__'` (then trains); importing it
and setting them here is how it is used without training. Trace: python -m transformer_trace trace trace_driver.py"""
import torch

import Transformer as tutorial

tutorial.src_vocab = {"P": 0, "ich": 1, "mochte": 2, "ein": 3, "bier": 4}
tutorial.tgt_vocab = {"P": 0, "i": 1, "want": 2, "a": 3, "beer": 4, "S": 5, "E": 6}
tutorial.src_vocab_size, tutorial.tgt_vocab_size = len(tutorial.src_vocab), len(tutorial.tgt_vocab)
tutorial.src_len = tutorial.tgt_len = 5
tutorial.d_model, tutorial.d_ff, tutorial.d_k, tutorial.d_v, tutorial.n_layers, tutorial.n_heads = 32, 64, 8, 8, 2, 4

torch.manual_seed(0)
model = tutorial.Transformer().eval()
enc_inputs = torch.tensor([[1, 2, 3, 4, 0], [1, 2, 4, 0, 0]])  # 'ich mochte ein bier P', 'ich mochte bier P P'
dec_inputs = torch.tensor([[5, 1, 2, 3, 4], [5, 1, 2, 4, 0]])  # 'S i want a beer', 'S i want beer P'
with torch.no_grad():
    logits, *_ = model(enc_inputs, dec_inputs)
print("logits", tuple(logits.shape))
