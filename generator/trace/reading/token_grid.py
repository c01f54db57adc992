"""Tokens kept as a 2-D grid: hierarchical ViTs (a Swin Transformer, Twins-SVT) hold their tokens as (B, H', W', C)
from the patch merging to the pooling, so every step of a block that the catalogue names (B, N, C) is a grid of
H'·W' tokens. Read with the grid flattened row by row, (B, H'·W', C), the order `x.flatten(1, 2)` or a
`rearrange('b h w c -> b (h w) c')` gives, and the order in which a ViT's patch convolution lists its patches. Where
no (B, N, C) step binds the number of tokens, the grid steps bind it, provided two or more steps show the same grid
(one 4-D tensor alone may be a convolution's (B, C, H', W') output, whose axes a grid reading would misname)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import torch

Named = list[tuple[tuple[str, ...], tuple[int, ...]]]


def _tokens_step(expressions: tuple[str, ...]) -> bool:
    """A step the catalogue names (B, <tokens>, <width>)."""
    return len(expressions) == 3 and expressions[0] == "B"


def grids_flattened(named: Named) -> Named:
    """``named`` with each (B, H', W', X) shape of a (B, L, X) step read as (B, H'·W', X), where at least two such
    steps show the same grid; ``named`` unchanged otherwise."""
    grids = Counter(shape for expressions, shape in named if _tokens_step(expressions) and len(shape) == 4)
    shared = {shape for shape, count in grids.items() if count > 1}
    return [(expressions, (shape[0], shape[1] * shape[2], shape[3]))
            if _tokens_step(expressions) and shape in shared else (expressions, shape)
            for expressions, shape in named]


def grid_layouts(tensor: torch.Tensor, expressions: tuple[str, ...],
                 expected: tuple[int, ...]) -> Iterator[tuple[str, torch.Tensor]]:
    """(what the page says, the tensor read) for a (B, H', W', X) tensor of a (B, L, X) step with H'·W' = L."""
    shape = tuple(tensor.shape)
    if not _tokens_step(expressions) or len(shape) != 4 or len(expected) != 3:
        return
    B, L, X = expected
    if shape[0] == B and shape[3] == X and shape[1] * shape[2] == L and min(shape[1], shape[2]) > 1:
        yield (f"the tokens kept as a {shape[1]} × {shape[2]} grid (B, H', W', {expressions[2]}), as hierarchical "
               f"ViTs hold them; read with the grid flattened row by row, as ({', '.join(expressions)})",
               tensor.reshape(B, L, X))
