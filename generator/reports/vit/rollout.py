"""Attention rollout (Abnar & Zuidema, 2020): how much each input token reaches each output token through every block.

Each block's head-averaged attention A_l is mixed with the identity, for the residual path that
carries every token past the attention, and re-normalised to rows that sum to 1; the product over
the blocks, last block first, is the rollout R = Â_L ··· Â_1.
"""

from __future__ import annotations

import torch


def attention_rollout(probs: list[torch.Tensor]) -> torch.Tensor:
    """``probs``: each block's attention probabilities (B, h, N1, N1), first block first -> R (B, N1, N1)."""
    rollout = None
    for block_probs in probs:
        mean = block_probs.mean(dim=1)  # (B, h, N1, N1) -> (B, N1, N1): heads averaged
        eye = torch.eye(mean.size(-1), dtype=mean.dtype, device=mean.device)
        mixed = 0.5 * mean + 0.5 * eye  # (B, N1, N1): the residual path as attention to oneself
        mixed = mixed / mixed.sum(dim=-1, keepdim=True)
        rollout = mixed if rollout is None else mixed @ rollout  # later blocks act on what earlier ones produced
    if rollout is None:
        raise ValueError("attention rollout needs the attention of at least one block")
    return rollout
