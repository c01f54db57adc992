"""Driver (ours, not upstream): hkproj's (Umar Jamil's) "Coding a Transformer from scratch" encoder–decoder at a tiny
size (d_model 32, 4 heads, d_ff 64, 2 + 2 layers, sequence length 8, vocabularies of 20 and 24), random weights
(upstream's Xavier init, seed 0), a batch of two source sentences of 8 tokens (the second ends in two padding tokens,
ID 0) and two targets of 8 (the second ends in one), one forward pass in eval mode as upstream's `train.py` runs it:
`encode`, `decode`, `project`. The masks are built as upstream's `dataset.py` builds them (an int padding mask
(B, 1, 1, S); the causal mask `triu(…, diagonal=1) == 0`, (1, T, T), and-ed with the target's padding), copied here
because `dataset.py` imports `datasets`/`tokenizers`, which this driver does not need.
Trace: python -m transformer_trace trace driver.py"""
import torch

from model import build_transformer

torch.manual_seed(0)
model = build_transformer(src_vocab_size=20, tgt_vocab_size=24, src_seq_len=8, tgt_seq_len=8, d_model=32, N=2, h=4,
                          dropout=0.1, d_ff=64).eval()
src = torch.tensor([[5, 9, 3, 14, 7, 2, 11, 4], [8, 4, 12, 6, 3, 17, 0, 0]])  # Snapshot #1
tgt = torch.tensor([[1, 6, 13, 4, 2, 21, 9, 3], [1, 9, 5, 15, 2, 7, 18, 0]])  # Snapshot #2


def causal_mask(size):
    mask = torch.triu(torch.ones((1, size, size)), diagonal=1).type(torch.int)  # Snapshot #25
    return mask == 0


encoder_mask = (src != 0).unsqueeze(1).unsqueeze(1).int()  # (B, 1, 1, S)
decoder_mask = (tgt != 0).unsqueeze(1).int() & causal_mask(tgt.size(1))  # (B, T, T)
with torch.no_grad():
    encoder_output = model.encode(src, encoder_mask)
    decoder_output = model.decode(encoder_output, encoder_mask, tgt, decoder_mask.unsqueeze(1))
    logits = model.project(decoder_output)
print("next tokens", logits.argmax(-1).tolist())
