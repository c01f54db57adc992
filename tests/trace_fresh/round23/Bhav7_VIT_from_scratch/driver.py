"""Ours: one forward pass of Bhav7/VIT_from_scratch's `VisionTransformer` (`models.py` and `layers.py`, a learner's
"Multi-Head Attention and Vision Transformer From Scratch" for Fashion-MNIST: the images cut into flattened patches by
upstream's own `patch_generator` (`utils.py`) before the model, a Linear projection, a class token (1, C) repeated to
the batch, positions looked up from an `nn.Embedding` of the token indices, pre-norm encoder blocks with separate
query, key and value Linears, the key transposed by `permute(0,1,3,2)` inside the product, then row 0 normalised by
the final LayerNorm after pooling, and an MLP head (Linear, GELU, Linear)), untrained, in eval mode, seed 0. Tiny
sizes: two 3 x 32 x 32 images, patches of 8 (16 patches of 192 values, 17 tokens), width 32, 4 heads of 8, 2 blocks,
an MLP of 128 (upstream's 4 x width), 10 classes."""
import torch

from models import VisionTransformer
from utils import patch_generator

torch.manual_seed(0)
model = VisionTransformer(num_patches=16, input_dimension=192, latent_dimension=32, num_classes=10,
                          num_encoder_blocks=2, num_heads=4).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
patches = torch.tensor([patch_generator(image, 8) for image in img])  # BREAKPOINT S03
with torch.no_grad():
    logits = model(patches)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, :4].tolist()])
