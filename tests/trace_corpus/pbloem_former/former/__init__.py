from .modules import SelfAttention, SelfAttentionWide, TransformerBlock, SelfAttentionRelative, SelfAttentionNarrow, Attention

from .transformers import GTransformer, CTransformer

