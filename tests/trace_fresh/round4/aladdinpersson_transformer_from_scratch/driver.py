"""Driver (ours, not upstream): Aladdin Persson's "transformer from scratch" (Machine-Learning-Collection,
transformer_from_scratch.py) at a tiny size (embed_size 32, 4 heads, forward_expansion 2, 2 + 2 layers,
max_length 16, vocabularies of 20 and 24), random weights (seed 0), a batch of two source sentences of 9 tokens (the
first ends in one padding token, ID 0, as upstream's own example) and two targets of 8, one forward pass in eval mode
as upstream's `__main__` runs it: model(x, trg[:, :-1]), the masks built by the model's make_src_mask/make_trg_mask.
Trace: python -m transformer_trace trace driver.py"""
import torch

from transformer_from_scratch import Transformer

torch.manual_seed(0)
model = Transformer(20, 24, src_pad_idx=0, trg_pad_idx=0, embed_size=32, num_layers=2, forward_expansion=2, heads=4,
                    dropout=0.1, device="cpu", max_length=16).eval()
x = torch.tensor([[1, 5, 6, 4, 3, 9, 5, 2, 0], [1, 8, 7, 3, 4, 5, 6, 7, 2]])  # Snapshot #1
trg = torch.tensor([[1, 7, 4, 3, 5, 9, 2, 0], [1, 5, 6, 2, 4, 7, 6, 2]])  # Snapshot #2
with torch.no_grad():
    out = model(x, trg[:, :-1])
print("next tokens", out.argmax(-1).tolist())
