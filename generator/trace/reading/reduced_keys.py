"""Keys and values at fewer positions than the queries: attention whose keys and values are read from a reduced
sequence of the same image (PVT's spatial-reduction attention: a strided convolution and a LayerNorm of the token
grid; CvT's convolutional projections with a key/value stride), the class token kept or not. The queries keep every
position; the keys, the values, the scores and the probabilities have M < N1 key positions. Read as they are: the
checks' formulas (Q·Kᵀ/√hs, a softmax over the keys, probs·V) hold for any number of keys, so every check of those
steps runs on them unchanged and a bug in them is judged as it is for N1 keys."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from transformer_trace.models.recording import Role

# the declared roles of the steps read as keys or values at fewer positions (a narrower step of any other role does
# not fit: only keys and values may come from another sequence than the queries)
KEYS_OR_VALUES = frozenset({Role.KEYS, Role.VALUES})


def reduced_key_layouts(tensor: torch.Tensor, expressions: tuple[str, ...], expected: tuple[int, ...],
                        roles: frozenset[Role]) -> Iterator[tuple[str, torch.Tensor]]:
    """The readings of ``tensor`` with fewer key positions than ``expected`` names, each as (what the page says, the
    tensor read): keys or values (B, h, M, hs) for (B, h, N1, hs), where the catalogue declares the step keys or values
    (``roles``); scores or probabilities (B, h, N1, M) for (B, h, N1, N1), the queries' axis whole."""
    shape = tuple(tensor.shape)
    if len(shape) != 4 or len(expressions) != 4 or expressions[1] != "h":
        return
    B, h, L, last = expected
    if roles & KEYS_OR_VALUES and expressions[3] == "hs" and shape[:2] == (B, h) and shape[3] == last \
            and 0 < shape[2] < L:
        yield (f"keys or values at {shape[2]} positions, fewer than the {L} "
                     "queries (a reduced key/value sequence: a strided convolution or a pooling of the token grid "
                     f"before the projection); read as they are, ({', '.join(expressions[:2])}, {shape[2]}, "
                     f"{expressions[3]})", tensor)
    if expressions[2] == expressions[3] and shape[:3] == (B, h, L) and 0 < shape[3] < L:
        yield (f"each of the {L} queries over {shape[3]} keys, fewer than the "
                     "queries (a reduced key/value sequence); read as they are, every check of the step taking the "
                     "keys as captured", tensor)
