"""Driver (ours, not upstream): RobertCsordas/transformer_generalization's **Universal Transformer** encoder–decoder
(`layers/transformer/universal_transformer.py`: one encoder layer and one decoder layer, each **applied `depth` times
with the same weights**, `self.layers = [self.layer] * depth`), inside upstream's own `TransformerEncDecModel`
(`models/transformer_enc_dec.py`), as its training scripts build it for the `universal` variants: post-norm layers
"based on PyTorch's internal implementation", an attention of its own (`MultiHeadAttention`: the keys and values from
**one fused Linear whose output is laid out (head, k/v, head size)**, `transform_data` splitting it and the queries
with the heads folded into the batch axis, `torch.bmm`, the scale 1/√hs applied to the logits inside the softmax call,
boolean masks filled with −inf), a source-length padding mask, an SOS token prepended to the source, the embeddings
scaled by √C before the sinusoid table ("opennmt" scale mode), and an output layer **tied to the target embedding**
(`TiedEmbedding`: `F.linear` with the embedding's weight, held in a list, and a bias of its own).

Tiny sizes (width 32, 4 heads of 8, feed-forward 64, encoder and decoder depth 3, 9 source and 10 target tokens),
seed 0, eval mode, one teacher-forced forward pass without gradients (`forward(..., teacher_forcing=True)`) on two
source sentences of 6 tokens (the second padded after 4) and two targets of 5.
Trace: python -m transformer_trace trace driver.py"""
import torch

from layers.transformer import UniversalTransformer
from models.transformer_enc_dec import TransformerEncDecModel

torch.manual_seed(0)
model = TransformerEncDecModel(9, 10, state_size=32, ff_multiplier=2, max_len=64, transformer=UniversalTransformer,
                               tied_embedding=True, scale_mode="opennmt", nhead=4, num_encoder_layers=3,
                               num_decoder_layers=3)
model.eval()
src = torch.tensor([[1, 5, 3, 8, 2, 7], [4, 6, 2, 1, 0, 0]])
src_len = torch.tensor([6, 4])
target = torch.tensor([[2, 9, 4, 4, 1], [7, 3, 3, 8, 5]])
target_len = torch.tensor([5, 5])
with torch.no_grad():
    result = model(src, src_len, target, target_len, teacher_forcing=True)
print("logits", tuple(result.data.shape), "next tokens", result.data[:, -1].argmax(-1).tolist())
