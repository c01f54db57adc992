"""Tracing someone else's GPT (`python -m generator trace`): how students mark its snapshots, what a trace checks beyond
the catalogue's own checks, and which snapshots are attention probabilities (generator/trace/)."""

from generator.trace.verify import (TraceSpec, block_input, causal_mask, gelu_range, hit_of, layer_norm_of, probabilities_of, same_as,
                                    scores_of)

TRACE = TraceSpec(
    keyword="BREAKPOINT",
    letter="G",
    checks={
        5: block_input(4, 24, "the embeddings, G04"),
        6: layer_norm_of(5),
        11: scores_of(8, 9, heads=True),
        12: causal_mask(),
        14: probabilities_of(None, causal=True),
        19: layer_norm_of(18),
        21: gelu_range(),
        24: same_as(23, "is the second residual sum (G23): pre-norm blocks normalise in the next block"),
        25: layer_norm_of((24, 0, -1)),  # the last block's output
    },
    attention={14: ("T", "T")},
)
