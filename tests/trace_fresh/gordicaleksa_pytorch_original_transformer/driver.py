"""Driver (ours, not upstream): gordicaleksa's pytorch-original-transformer at a tiny size (model dimension 32, 4 heads,
2 + 2 layers, vocabularies of 11 and 13), random weights (upstream's xavier init, seed 0), a batch of two source
sentences of 7 tokens and two target prefixes of 6, one forward pass in eval mode. The masks are built as upstream's
utils/data_utils.py builds them (get_masks_and_count_tokens_src/_trg, copied here: that module needs torchtext).
Trace: python -m transformer_trace trace driver.py"""
import torch

from models.definitions.transformer_model import Transformer

PAD = 0
torch.manual_seed(0)
model = Transformer(model_dimension=32, src_vocab_size=11, trg_vocab_size=13, number_of_heads=4, number_of_layers=2,
                    dropout_probability=0.1).eval()
src_token_ids_batch = torch.tensor([[1, 5, 7, 3, 9, 4, 2], [1, 8, 6, 6, 3, 2, PAD]])  # Snapshot #1
trg_token_ids_batch = torch.tensor([[1, 4, 12, 7, 5, 9], [1, 11, 3, 8, 2, PAD]])  # Snapshot #2
batch_size, sequence_length = trg_token_ids_batch.shape
src_mask = (src_token_ids_batch != PAD).view(batch_size, 1, 1, -1)
trg_padding_mask = (trg_token_ids_batch != PAD).view(batch_size, 1, 1, -1)
trg_no_look_forward_mask = torch.triu(torch.ones((1, 1, sequence_length, sequence_length)) == 1).transpose(2, 3)
trg_mask = trg_padding_mask & trg_no_look_forward_mask  # Snapshot #25
with torch.no_grad():
    trg_log_probs = model(src_token_ids_batch, trg_token_ids_batch, src_mask, trg_mask)
print("predicted target IDs:", trg_log_probs.argmax(-1).view(batch_size, -1).tolist())
