"""Keys and values at more positions than the queries: a causal decoder whose keys and values run over a memory of
earlier positions before the current ones (Transformer-XL's segment memory, ``h = cat(mem, x)``; a key/value cache
read back in the same pass). The queries are the last T of the S key positions, so query i is the key position
M + i (M = S − T earlier positions before it): the causal rule lets it see keys 0 … M + i (checks/masks.py
``future_entries``). Read as they are: the checks' formulas (Q·Kᵀ/√hs, a softmax over the keys, probs·V) hold for
any number of keys, so every check of those steps runs on them unchanged."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from transformer_trace.models.recording import Role

# only keys and values may run over other positions than the queries: a longer step of any other role does not fit
KEYS_OR_VALUES = frozenset({Role.KEYS, Role.VALUES})


def memory_key_layouts(tensor: torch.Tensor, expressions: tuple[str, ...], expected: tuple[int, ...],
                       roles: frozenset[Role]) -> Iterator[tuple[str, torch.Tensor]]:
    """The readings of ``tensor`` with more key positions than ``expected`` names, each as (what the page says, the
    tensor read): keys or values (B, h, S, hs) for (B, h, T, hs), where the catalogue declares the step keys or values
    (``roles``); scores or probabilities (B, h, T, S) for (B, h, T, T), the queries' axis whole."""
    shape = tuple(tensor.shape)
    if len(shape) != 4 or len(expressions) != 4 or expressions[1] != "h":
        return
    B, h, L, last = expected
    if roles & KEYS_OR_VALUES and expressions[3] == "hs" and shape[:2] == (B, h) and shape[3] == last \
            and shape[2] > L:
        yield (f"keys or values at {shape[2]} positions, {shape[2] - L} more than the {L} queries (a memory of "
               "earlier positions before the current ones: Transformer-XL's segment memory, a key/value cache); read "
               f"as they are, ({', '.join(expressions[:2])}, {shape[2]}, {expressions[3]})", tensor)
    if expressions[2] == expressions[3] and shape[:3] == (B, h, L) and shape[3] > L:
        yield (f"each of the {L} queries over {shape[3]} keys, {shape[3] - L} earlier positions (a memory) before "
               f"the queries' own; read as they are, query i being key position {shape[3] - L} + i", tensor)
