"""Ours: one forward pass of the repository's VisionTransformer (src/vision_transformer/model/) at a tiny size, with
the final LayerNorm and the fine-tuning (linear) head, untrained, in eval mode."""
import torch

from vision_transformer.model.vision_transformer import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(image_size=32, in_channels=3, patch_size=8, embed_dim=32, strict=True,
                          positional_embedding_dropout_p=0.1, num_attention_heads=4, mha_attention_dropout_p=0.1,
                          mha_proj_dropout_p=0.1, mlp_ratio=4.0, mlp_dropout_p=0.1, num_encoder_blocks=2,
                          encoder_final_norm=True, num_classes=10, head_type="finetune").eval()
# the repository initialises [CLS] and the positions with zeros (its training script trains them): random values
# here, so that a position added twice or a token picked wrongly shows in one untrained forward pass
with torch.no_grad():
    model.embeddings.cls_token.normal_(std=0.02)
    model.embeddings.pos_embed.normal_(std=0.02)
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
