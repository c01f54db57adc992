"""Driver (ours, not upstream): ajhalthor/Transformer-Neural-Network's encoder-decoder (transformer.py, the model of
the "Transformers from scratch" video series: English to Kannada characters) at a tiny size (width 32, 4 heads, two
layers, a feed-forward width of 64, sentences padded to 10 characters), random weights (seed 0), one forward pass in
eval mode of a batch of two sentence pairs, with the masks built as the repository's Transformer_Trainer_Notebook
builds them (additive -1e9: a look-ahead mask and padding masks over rows and columns past each sentence's end) and
the start and end tokens as its training loop passes them.
Our vocabularies are small character lists (the upstream notebook's English list, ASCII letters for the target).
Trace: python -m transformer_trace trace driver.py"""
import string

import torch

from transformer import Transformer

START_TOKEN, PADDING_TOKEN, END_TOKEN = "<START>", "<PADDING>", "<END>"
source_vocabulary = [START_TOKEN, " ", "?", "."] + list(string.ascii_lowercase) + [PADDING_TOKEN, END_TOKEN]
target_vocabulary = [START_TOKEN, " ", "?", "."] + list(string.ascii_lowercase) + [PADDING_TOKEN, END_TOKEN]
source_to_index = {token: index for index, token in enumerate(source_vocabulary)}
target_to_index = {token: index for index, token in enumerate(target_vocabulary)}
max_sequence_length = 10
NEG_INFTY = -1e9


def padding_mask(query_lengths: list[int], key_lengths: list[int]) -> torch.Tensor:
    """(B, L, L): True on every query row and key column past its sentence's end (its characters plus one start or
    end token)."""
    mask = torch.zeros(len(query_lengths), max_sequence_length, max_sequence_length, dtype=torch.bool)
    for row, (query_length, key_length) in enumerate(zip(query_lengths, key_lengths)):
        mask[row, :, key_length + 1:] = True
        mask[row, query_length + 1:, :] = True
    return mask


torch.manual_seed(0)
model = Transformer(d_model=32, ffn_hidden=64, num_heads=4, drop_prob=0.1, num_layers=2,
                    max_sequence_length=max_sequence_length, kn_vocab_size=len(target_vocabulary),
                    english_to_index=source_to_index, kannada_to_index=target_to_index, START_TOKEN=START_TOKEN,
                    END_TOKEN=END_TOKEN, PADDING_TOKEN=PADDING_TOKEN).eval()
source_batch = ("go home.", "we run?")
target_batch = ("va chez", "on court")
source_lengths = [len(sentence) for sentence in source_batch]
target_lengths = [len(sentence) for sentence in target_batch]
look_ahead = torch.triu(torch.ones(max_sequence_length, max_sequence_length, dtype=torch.bool), diagonal=1)
encoder_mask = torch.where(padding_mask(source_lengths, source_lengths), NEG_INFTY, 0)
decoder_mask = torch.where(look_ahead + padding_mask(target_lengths, target_lengths), NEG_INFTY, 0)  # Snapshot #25
cross_mask = torch.where(padding_mask(target_lengths, source_lengths), NEG_INFTY, 0)
with torch.no_grad():
    logits = model(source_batch, target_batch, encoder_mask, decoder_mask, cross_mask,
                   enc_start_token=False, enc_end_token=False, dec_start_token=True, dec_end_token=True)
print("logits", tuple(logits.shape), "first predictions", logits.argmax(-1)[0].tolist())
