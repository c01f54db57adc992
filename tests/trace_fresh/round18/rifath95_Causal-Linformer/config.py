"""Stand-in for upstream's `config.py` (ours, not upstream): the same names, derived the same way, at tiny sizes on the
CPU (upstream's: width 384, 6 heads, 6 layers, 256 positions in 64 global blocks, a CUDA/MPS device when there is one).
The attention type is upstream's default, the causal blockwise Linformer."""
import torch

device = "cpu"

# training parameters (not used by one forward pass)
batch_size = 2
n_steps = 1
dropout = 0.2
lr = 3e-4

# model parameters
block_size = 16
d_hidden = 32
n_layers = 2

n_heads = 4
d_head = d_hidden // n_heads

attention_type = "causal_blockwise_linformer"
num_global_blocks = 4
causal_block_size = block_size // num_global_blocks  # 4 keys and values compressed into each global block
local_window = causal_block_size - 1  # each query sees itself and the 2 positions before it exactly
share_linformer_projections_across_heads = False  # upstream's default: E and F of their own per head
