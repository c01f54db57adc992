"""Ours: one forward pass of Apzmie/Vision-Transformer-From-Scratch's `TransformerEncoder` (`vision_transformer.py`, a
single-file ViT written from scratch: patches cut with two `unfold`s, raw parameter matrices for Q, K, V, the output
projection and both MLP layers (`torch.matmul(x, self.W)`, the MLP's biases added on the same line), pre-norm layers
through a `Norm` wrapper class, and the final LayerNorm applied to the class row after it is picked), untrained, in
eval mode, seed 0. Upstream fixes the patch at 16 x 16 from 3 channels and the position table at 1 + 196 tokens, so two
3 x 224 x 224 images (196 patches, 197 tokens); width 32, 4 heads of 8, 2 layers, an MLP of 128 (upstream's 4 x
width); 10 classes. Upstream initialises the class token and the position table at zero (training moves them); ours
draws them from N(0, 0.02), as a trained model's are nonzero, so that the class token and the positions can be told
apart from zeros."""
import torch

from vision_transformer import TransformerEncoder

torch.manual_seed(0)
model = TransformerEncoder(d_model=32, num_heads=4, num_layers=2, num_classes=10).eval()
with torch.no_grad():
    torch.nn.init.normal_(model.embed.cls_token, std=0.02)
    torch.nn.init.normal_(model.embed.pos_embedding, std=0.02)
img = torch.randn(2, 3, 224, 224)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, :4].tolist()])
