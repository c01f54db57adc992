"""Driver (ours, not upstream): labml.ai's annotated ViT (`labml_nn/transformers/vit`, with its TransformerLayer,
MultiHeadAttention and FeedForward) at a tiny size (32×32 images, 8×8 patches, d_model 32, 2 layers, 4 heads, ff 64,
head hidden 64, 10 classes), random weights, a batch of two random images, one forward pass in eval mode. It builds
the model as upstream's `experiment.py` does (`_vit`), without labml's configs, and gives the learned positions
(zero-initialised upstream) small random values so that their step is visible.
Trace: python -m transformer_trace trace driver.py"""
import torch

from labml_nn.transformers.feed_forward import FeedForward
from labml_nn.transformers.mha import MultiHeadAttention
from labml_nn.transformers.models import TransformerLayer
from labml_nn.transformers.vit import ClassificationHead, LearnedPositionalEmbeddings, PatchEmbeddings, \
    VisionTransformer

torch.manual_seed(0)
d_model, heads = 32, 4
layer = TransformerLayer(d_model=d_model, self_attn=MultiHeadAttention(heads, d_model, 0.1),
                         feed_forward=FeedForward(d_model, 64, 0.1), dropout_prob=0.1)
model = VisionTransformer(layer, 2, PatchEmbeddings(d_model, 8, 3), LearnedPositionalEmbeddings(d_model),
                          ClassificationHead(d_model, 64, 10)).eval()
with torch.no_grad():
    model.pos_emb.positional_encodings.normal_(std=0.02)
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
