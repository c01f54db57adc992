"""Tracing someone else's encoder–decoder (`python -m generator trace`): how students mark its snapshots, what a trace
checks beyond the catalogue's own checks, and which snapshots are attention probabilities (generator/trace/)."""

from generator.trace.verify import (TraceSpec, block_input, causal_mask, context_of, embedding_rows, hit_of, ids, layer_norm_of,
                                    probabilities_of, same_as, scores_of, sinusoidal_added, slice_of)

TRACE = TraceSpec(
    keyword="SNAPSHOT",
    letter="#",
    checks={
        1: ids(), 2: ids(),
        4: embedding_rows(3, 1),
        5: sinusoidal_added(4),
        6: block_input(5, 19, "the embeddings, #5"),
        10: scores_of((12, 0), (12, 1), heads=True),
        11: probabilities_of(10),
        14: same_as(6, "its first operand is the block input (#6), the residual path"),
        15: layer_norm_of((14, 0), (14, 1)),
        16: same_as(15, "is the LayerNorm output (#15)"),
        19: layer_norm_of(16, 18),
        24: scores_of((27, 0), (27, 1), heads=True),
        25: causal_mask(),
        26: probabilities_of(24, mask=25, causal=True),
        33: scores_of(30, 31, heads=False),
        34: probabilities_of(33),
        35: context_of(34, 32, v_full=True),
        37: same_as(36, "is the output of the cross-attention sublayer (#36)"),
        40: layer_norm_of(37, 39),
        41: hit_of(40, -1, "is the last decoder layer's output (#40 at its last pass)"),
        43: slice_of(42, (0, 0)),
    },
    attention={11: ("S", "S"), 26: ("T", "T"), 34: ("T", "S")},
)
