"""Tracing someone else's ViT (`python -m generator trace`): how students mark its snapshots, what a trace checks beyond
the catalogue's own checks, and which snapshots are attention probabilities (generator/trace/)."""

from generator.trace.verify import TraceSpec, block_input, gelu_range, hit_of, layer_norm_of, probabilities_of, same_as, scores_of, sum_of

TRACE = TraceSpec(
    keyword="BREAKPOINT",
    letter="S",
    checks={
        8: block_input(7, 20, "the embeddings, S07"),
        12: scores_of(9, 10, heads=True),
        13: probabilities_of(12),
        16: layer_norm_of(8, 15),
        17: gelu_range(),
        19: sum_of(8, 15, 18),
        20: same_as(19, "is the residual sum after the MLP (S19): pre-norm blocks normalise in the next block"),
        21: hit_of(20, 2, "is the second block's output (S20 at its second pass)"),
        22: hit_of(20, -1, "is the last block's output (S20 at its last pass)"),
        23: layer_norm_of(22),
    },
    attention={13: ("N1", "N1")},
    example_size=("--vit-size", "tiny"),  # examples/vit_trace.py is ViT-Tiny
)
