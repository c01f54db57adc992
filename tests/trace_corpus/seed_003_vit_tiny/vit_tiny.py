"""The model classes of seed 003 (/work/shared/seeds/003_5b5c18c164172261.txt, a teaching notebook: a complete
ViT-Tiny for CIFAR-10, as text), copied as they are, in the notebook's order (VisionTransformer is defined, then
extended with its forward method); only the imports they use and breakpoint comments are added."""
import torch
import torch.nn as nn


class PatchEmbedding(nn.Module):
    """Convert image into patch embeddings using Conv2d.

    Input:  (B, C, H, W) image tensor
    Output: (B, num_patches, embed_dim) patch embeddings
    """
    def __init__(self, img_size=32, patch_size=4, in_channels=3, embed_dim=192):
        super().__init__()
        self.img_size = img_size
        self.patch_size = patch_size
        self.num_patches = (img_size // patch_size) ** 2  # 64 for 32/4

        # Conv2d does patch extraction AND linear projection in one step
        self.projection = nn.Conv2d(
            in_channels, embed_dim,
            kernel_size=patch_size, stride=patch_size
        )

    def forward(self, x):
        # x: (B, C, H, W) -> (B, embed_dim, H/P, W/P)
        x = self.projection(x)
        # Flatten spatial dims and transpose: (B, embed_dim, N) -> (B, N, embed_dim)
        x = x.flatten(2).transpose(1, 2)  # BREAKPOINT S04
        return x


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention built from scratch.

    Each head independently computes Q, K, V projections and attention.
    Heads are concatenated and projected through W_O.
    """
    def __init__(self, embed_dim=192, num_heads=3, dropout=0.1):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        assert embed_dim % num_heads == 0, "embed_dim must be divisible by num_heads"

        # Q, K, V projections (combined for efficiency)
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        # Output projection
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.attn_drop = nn.Dropout(dropout)
        self.scale = self.head_dim ** -0.5

    def forward(self, x, return_attention=False):
        B, N, D = x.shape
        # Project to Q, K, V and reshape for multi-head
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim)
        qkv = qkv.permute(2, 0, 3, 1, 4)  # (3, B, heads, N, head_dim)
        q, k, v = qkv.unbind(0)            # each: (B, heads, N, head_dim)  # BREAKPOINT S09, S10, S11

        # Scaled dot-product attention
        attn_scores = (q @ k.transpose(-2, -1)) * self.scale  # (B, heads, N, N)  # BREAKPOINT S12
        attn_weights = attn_scores.softmax(dim=-1)  # BREAKPOINT S13
        attn_weights = self.attn_drop(attn_weights)

        # Weighted sum of values
        out = (attn_weights @ v)            # (B, heads, N, head_dim)  # BREAKPOINT S14
        out = out.transpose(1, 2).reshape(B, N, D)  # (B, N, D)
        out = self.out_proj(out)  # BREAKPOINT S15

        if return_attention:
            return out, attn_weights  # (B, heads, N, N)
        return out, None


class TransformerBlock(nn.Module):
    """A single Transformer block with Pre-Norm architecture.

    Pre-Norm: LayerNorm BEFORE attention/MLP (more stable training).
    Uses our from-scratch MultiHeadSelfAttention, not nn.MultiheadAttention.
    """
    def __init__(self, embed_dim=192, num_heads=3, mlp_ratio=4.0, dropout=0.1):
        super().__init__()
        self.norm1 = nn.LayerNorm(embed_dim)
        self.attn = MultiHeadSelfAttention(embed_dim, num_heads, dropout)
        self.norm2 = nn.LayerNorm(embed_dim)

        mlp_hidden = int(embed_dim * mlp_ratio)
        self.mlp = nn.Sequential(
            nn.Linear(embed_dim, mlp_hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(mlp_hidden, embed_dim),
            nn.Dropout(dropout),
        )

    def forward(self, x, return_attention=False):
        # Pre-Norm Attention with residual
        attn_output, attn_weights = self.attn(
            self.norm1(x), return_attention=return_attention
        )
        x = x + attn_output

        # Pre-Norm MLP with residual
        x = x + self.mlp(self.norm2(x))  # BREAKPOINT S19, S20

        if return_attention:
            return x, attn_weights  # attn_weights: (B, heads, N, N)
        return x


class VisionTransformer(nn.Module):
    """Complete Vision Transformer for image classification."""

    def __init__(self, img_size=32, patch_size=4, in_channels=3,
                 num_classes=10, embed_dim=192, depth=6, num_heads=3,
                 mlp_ratio=4.0, dropout=0.1):
        super().__init__()
        self.embed_dim = embed_dim
        self.depth = depth
        self.num_patches = (img_size // patch_size) ** 2

        # 1. Patch embedding
        self.patch_embed = PatchEmbedding(
            img_size, patch_size, in_channels, embed_dim
        )

        # 2. CLS token and position embeddings
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(
            torch.zeros(1, self.num_patches + 1, embed_dim)
        )
        self.pos_drop = nn.Dropout(dropout)

        # 3. Transformer encoder (stack of blocks)
        self.blocks = nn.ModuleList([
            TransformerBlock(embed_dim, num_heads, mlp_ratio, dropout)
            for _ in range(depth)
        ])

        # 4. Classification head
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)

        # Initialize weights
        self._init_weights()

    def _init_weights(self):
        """Initialize weights following ViT conventions."""
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        nn.init.trunc_normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)


class VisionTransformer(VisionTransformer):
    """Add forward method to VisionTransformer."""

    def forward(self, x, return_attention=False):
        """
        Forward pass of the Vision Transformer.

        Args:
            x: Input images (B, C, H, W)
            return_attention: If True, also return attention weights
                              from the last block

        Returns:
            logits: Class predictions (B, num_classes)
            attn_weights: (optional) Attention from last layer (B, heads, N, N)
        """
        B = x.shape[0]

        # Step 1: Patch embedding ‚Äî (B, C, H, W) -> (B, num_patches, D)
        x = self.patch_embed(x)

        # Step 2: Prepend CLS token ‚Äî (B, num_patches, D) -> (B, num_patches+1, D)
        cls_tokens = self.cls_token.expand(B, -1, -1)  # BREAKPOINT S05
        x = torch.cat([cls_tokens, x], dim=1)  # BREAKPOINT S06

        # Step 3: Add position embeddings
        x = x + self.pos_embed  # BREAKPOINT S07, S08
        x = self.pos_drop(x)

        # Step 4: Pass through Transformer blocks
        attn_weights = None
        for i, block in enumerate(self.blocks):
            if return_attention and i == self.depth - 1:
                # Get attention from the last layer only
                x, attn_weights = block(x, return_attention=True)
            else:
                x = block(x)

        # Step 5: Extract CLS token (index 0)
        cls_output = x[:, 0]  # (B, D)  # BREAKPOINT S24

        # Step 6: Classification head
        cls_output = self.norm(cls_output)
        logits = self.head(cls_output)  # BREAKPOINT S25

        if return_attention:
            return logits, attn_weights
        return logits
