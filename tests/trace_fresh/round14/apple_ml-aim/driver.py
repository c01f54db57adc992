"""Ours: one forward pass of apple/ml-aim's AIMv2 image encoder (`aim.v2.torch.models.AIMv2VisionEncoder`), untrained,
in eval mode, seed 0, at tiny sizes: two 3 x 28 x 28 images, patch 7 (16 patches, no class token), width 32 in 4 heads
of 8, 2 blocks, SwiGLU hidden 64, learned absolute positions, RMSNorm throughout, and the attention-pooling head
(one learned query, 4 heads) that upstream's LiT model puts on the encoder, its linear giving 10 outputs."""
import torch

from aim.v2.torch.models import AIMv2VisionEncoder

torch.manual_seed(0)
model = AIMv2VisionEncoder(img_size=28, patch_size=7, embed_dim=32, mlp_hidden_dim=64, num_blocks=2, num_heads=4,
                           head_type="attention-pool", head_num_heads=4, head_linear_bias=True).eval()
# the head's linear maps to the width (upstream's LiT projects it afterwards); ours gives it 10 outputs like a classifier
model.head.linear = torch.nn.Linear(32, 10)
img = torch.randn(2, 3, 28, 28)  # BREAKPOINT S01
with torch.no_grad():
    out = model(img)
print("out", tuple(out.shape))
