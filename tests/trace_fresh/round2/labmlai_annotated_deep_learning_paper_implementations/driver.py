"""Driver (ours, not upstream): labml.ai's annotated Transformer as a GPT-style decoder, wired as upstream's
`AutoregressiveTransformer` (labml_nn/transformers/basic/autoregressive_experiment.py, whose module needs the labml
experiment machinery) wires it: the token embedding with the fixed sinusoids, an `Encoder` of pre-norm
`TransformerLayer`s run with the subsequent mask, the `Generator`'s logits. Tiny sizes (width 32, 4 heads, FFN 64,
2 layers, a 256-token byte vocabulary), random weights (seed 0), two prompts of 8 bytes laid out as upstream's code
wants them, sequence-first (T, B), one forward pass in eval mode, softmax of the logits.
Trace: python -m transformer_trace trace driver.py"""
import torch

from labml_nn.transformers.feed_forward import FeedForward
from labml_nn.transformers.mha import MultiHeadAttention
from labml_nn.transformers.models import EmbeddingsWithPositionalEncoding, Encoder, Generator, TransformerLayer
from labml_nn.transformers.utils import subsequent_mask

torch.manual_seed(0)
d_model, heads, d_ff, n_layers, n_vocab = 32, 4, 64, 2, 256
layer = TransformerLayer(d_model=d_model, self_attn=MultiHeadAttention(heads, d_model, 0.1),
                         feed_forward=FeedForward(d_model, d_ff, 0.1), dropout_prob=0.1)
src_embed = EmbeddingsWithPositionalEncoding(d_model, n_vocab).eval()
encoder = Encoder(layer, n_layers).eval()
generator = Generator(n_vocab, d_model).eval()
ids = torch.tensor([list(b"Hello, w"), list(b"the cat ")]).T  # BREAKPOINT G01
with torch.no_grad():
    mask = subsequent_mask(len(ids))
    x = src_embed(ids)
    x = encoder(x, mask)
    logits = generator(x)
    probs = logits.softmax(-1)  # BREAKPOINT G27
    next_probs = probs[-1, 0]  # BREAKPOINT G28
print("next bytes", probs[-1].argmax(-1).tolist())
