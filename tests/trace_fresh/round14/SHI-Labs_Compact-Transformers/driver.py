"""Ours: one forward pass of SHI-Labs/Compact-Transformers' CCT (`src.cct.CCT`, a Compact Convolutional Transformer),
untrained, in eval mode, seed 0, at tiny sizes: two 3 x 16 x 16 images through one 3 x 3 convolution (stride 1, ReLU,
3 x 3 max-pool of stride 2: an 8 x 8 grid, 64 tokens, no class token), learned positions, width 32 in 4 heads of 8,
2 layers, MLP ratio 2, sequence pooling, 10 classes; dropout and stochastic depth 0."""
import torch

from src.cct import CCT

torch.manual_seed(0)
model = CCT(img_size=16, embedding_dim=32, n_input_channels=3, n_conv_layers=1, kernel_size=3, stride=1, padding=1,
            pooling_kernel_size=3, pooling_stride=2, pooling_padding=1, dropout=0., attention_dropout=0.,
            stochastic_depth=0., num_layers=2, num_heads=4, mlp_ratio=2, num_classes=10,
            positional_embedding='learnable').eval()
img = torch.randn(2, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
