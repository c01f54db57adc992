"""Ours: one forward pass of lanl/vision_transformers_explained's T2T_ViT (`t2t_vit.py` with `vit.py`, `attention.py`,
`position_embedding.py`, the repository's `modules/`), untrained, in eval mode, seed 0, at tiny sizes: two 3 x 32 x 32
images; the Tokens-to-Token module soft-splits them three times with 3 x 3 unfolds of stride 2 (256, then 64, then 16
tokens), two token transformers of width 8 between the splits, a Linear to tokens of width 16; then a class token, a
sinusoid table added, two encoding blocks of 2 heads (of 8), a LayerNorm and a head on the class token, 10 outputs."""
import torch

from t2t_vit import T2T_ViT

torch.manual_seed(0)
model = T2T_ViT(img_size=(3, 32, 32), softsplit_kernels=(3, 3, 3), preds=10, token_len=16, token_chan=8, num_heads=2,
                T2T_hidden_chan_mul=1., Encoding_hidden_chan_mul=2., depth=2).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
