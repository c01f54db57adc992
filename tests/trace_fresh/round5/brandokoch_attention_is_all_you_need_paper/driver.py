"""Driver (ours, not upstream): brandokoch/attention-is-all-you-need-paper's MachineTranslationTransformer
(src/architectures/, copied here as architectures/ since its modules import `architectures.…`) at a tiny size (width
32, 4 heads, 2 blocks each side, d_ff 64, one shared vocabulary of 40 as upstream ties the embeddings), random weights
(seed 0), a batch of two source sentences of 9 token IDs (the second padded with 0, upstream's pad id) and two target
sentences of 8 (upstream drops the last before the decoder), one forward pass in eval mode without gradients, as
upstream's learner validates.
Trace: python -m transformer_trace trace driver.py"""
import torch

from architectures.machine_translation_transformer import MachineTranslationTransformer

torch.manual_seed(0)
model = MachineTranslationTransformer(d_model=32, n_blocks=2, src_vocab_size=40, trg_vocab_size=40, n_heads=4, d_ff=64,
                                      dropout_proba=0.1).eval()
src_token_ids = torch.tensor([[1, 12, 7, 30, 5, 22, 9, 17, 2], [1, 4, 28, 11, 33, 2, 0, 0, 0]])  # Snapshot #1
trg_token_ids = torch.tensor([[1, 8, 19, 3, 25, 14, 6, 2], [1, 31, 10, 21, 16, 27, 2, 0]])
with torch.no_grad():
    logits = model(src_token_ids, trg_token_ids)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
