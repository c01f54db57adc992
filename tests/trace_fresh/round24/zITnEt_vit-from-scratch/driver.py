"""Ours: one forward pass of zITnEt/vit-from-scratch's `Transformer` (`model/`, a student's CIFAR-10 ViT in six short
modules: a Conv2d patch embedding flattened and transposed, the class token prepended in the same module, a learned
table (N1, C) without a batch axis added by its own module, pre-norm encoder layers whose attention is called
(normed, normed, normed) with separate W_q, W_k, W_v split by a `split_heads` helper, a feed-forward network with its
own exact (erf) GELU, a final LayerNorm in the encoder, row 0 to a Linear head), untrained, in eval mode, seed 0. Tiny
sizes: two 3 x 32 x 32 images, patches of 8 (16 patches, 17 tokens), width 32, 4 heads of 8, 2 layers, d_ff 64,
10 classes."""
import torch

from model.transformer import Transformer

torch.manual_seed(0)
model = Transformer(classes=10, d_model=32, heads=4, d_ff=64, num_encoder_layers=2, patches=16, img_size=32,
                    patch_size=8, in_channels=3, dropout=0.1).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, :4].tolist()])
