"""Tracing someone else's ViT (`python -m generator trace`): how students mark its snapshots, which of the catalogue's
placeholders name one pass of the block loop, and which snapshots are attention probabilities (generator/trace/).
What a trace checks is the catalogue's own checks."""

from generator.trace.verify import TraceSpec

TRACE = TraceSpec(
    keyword="BREAKPOINT",
    letter="S",
    passes={"block2": (2, "{block}"), "block_last": (-1, "{block}")},
    attention={13: ("N1", "N1")},
    example_size=("--vit-size", "tiny"),  # examples/vit_trace.py is ViT-Tiny
)
