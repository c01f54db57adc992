"""Ours: one forward pass of Sora-mmh/ViT-implementation-with-MHA-and-GQA's `ViT` (`ViT/_base.py`, put under our
folder `gqa_vit/` because upstream's modules import each other relatively, `from ..attention import ...`) with its
grouped-query attention block (`attention/_gqa.py`): per key/value head a `GroupedQueryAttentionBranch` holding one
query Linear per query head of the group (hs wide) and one shared K and V Linear; the group's query heads stacked on
axis 0, each attending over the shared key and value; the group's contexts rearranged `q p h -> p (q h)` and merged to
one hs-wide head by an `nn.Linear` built inside `forward` (drawn anew at each call: upstream's own); the branches
concatenated and projected from (kv heads x hs) to the width. Upstream's branch stacks the query heads on the batch
axis, so it runs on one image only: one 3 x 32 x 32 image, patches of 8 (16 patches, 17 tokens), width 32, 4 query
heads of 8 in 2 groups (2 kv heads), 2 blocks, an MLP of 64, 10 classes. Untrained, eval mode, seed 0. Upstream
draws every Linear's weights from a normal of std 0.02, which leaves the scores of an untrained model all near zero (the
softmax uniform whatever its axis or scale); ours redraws them with PyTorch's default Linear initialisation, as a
trained model's scores are not near zero. `einops` is our stub (einops/, round twenty-one's), not installed here."""
import torch

from gqa_vit.ViT import ViT

torch.manual_seed(0)
model = ViT(img_size=32, channels=3, patch_size=8, embed_dim=32, hidden_dim=64, num_layers=2, num_query_heads=4,
            num_queries_per_group=2, dropout=0.1, num_classes=10, bias=True).eval()
for module in model.modules():
    if isinstance(module, torch.nn.Linear):
        module.reset_parameters()
img = torch.randn(1, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, :4].tolist()])
