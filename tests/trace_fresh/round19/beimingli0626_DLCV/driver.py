"""Driver (ours, not upstream): beimingli0626/DLCV's solution of EECS 498-007 (Michigan, "Deep Learning for Computer
Vision", WI2022) assignment 5, `A5_RNN_Transformer/transformers.py`: the student's encoder–decoder `Transformer` for the
assignment's toy arithmetic task ("BOS POSITIVE 0333 add POSITIVE 0696 EOS" -> "BOS POSITIVE 1029 EOS"), run as the
assignment's `train` runs it. Upstream's own `generate_token_dict` and `prepocess_input_sequence` make the token IDs (one
per digit); `position_encoding_simple` (the assignment's first encoding: position p / K, the same value in every channel)
makes the positions, passed to the model as inputs as upstream's `AddSubDataset` does; one `nn.Embedding` shared by
source and target; post-norm blocks with the student's own `LayerNormalization`; one `SelfAttention` module per head
(its own q/k/v Linears of width C/h), heads concatenated and projected by `back`; the boolean look-ahead mask
(True = blocked, (N, T, T)) from `get_subsequent_mask`; the decoder reads the target without its last token; logits
returned flattened to (N·T, V).

Tiny sizes: the assignment's 16-token vocabulary, width 32, 4 heads of 8, feed-forward 64, 2 encoder and 2 decoder
blocks; seed 0, eval mode, one forward pass without gradients on two problems (13 source tokens, 7 target tokens, 6
decoder positions). Trace: python -m transformer_trace trace driver.py"""
import torch

from transformers import (Transformer, generate_token_dict, position_encoding_simple,
                          prepocess_input_sequence)

SPECIAL = ["BOS", "EOS", "POSITIVE", "NEGATIVE", "add", "subtract"]
VOCAB = [str(digit) for digit in range(10)] + SPECIAL
token_dict = generate_token_dict(VOCAB)
questions = ["BOS POSITIVE 0333 add POSITIVE 0696 EOS", "BOS NEGATIVE 0012 subtract POSITIVE 0450 EOS"]
answers = ["BOS POSITIVE 1029 EOS", "BOS NEGATIVE 0462 EOS"]

torch.manual_seed(0)
model = Transformer(num_heads=4, emb_dim=32, feedforward_dim=64, dropout=0.2, num_enc_layers=2, num_dec_layers=2,
                    vocab_len=len(VOCAB))
model.eval()
ques_b = torch.tensor([prepocess_input_sequence(q, token_dict, SPECIAL) for q in questions])  # Snapshot #1
ans_b = torch.tensor([prepocess_input_sequence(a, token_dict, SPECIAL) for a in answers])  # Snapshot #2
ques_pos = torch.stack([position_encoding_simple(ques_b.shape[1], 32)[0] for _ in questions])
ans_pos = torch.stack([position_encoding_simple(ans_b.shape[1], 32)[0] for _ in answers])
with torch.no_grad():
    logits = model(ques_b, ques_pos, ans_b, ans_pos)
print("logits", tuple(logits.shape), "argmax", logits.argmax(-1).tolist(), "sum |logits|",
      round(float(logits.abs().sum()), 4))
