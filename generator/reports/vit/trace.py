"""Tracing someone else's ViT (`python -m transformer_trace trace`): how students mark its snapshots, which of the
catalogue's placeholders name one pass of the block loop (generator/trace/).
What a trace checks is the catalogue's own checks."""

from transformer_trace.trace.verify import TraceSpec

TRACE = TraceSpec(
    keyword="BREAKPOINT",
    letter="S",
    passes={"block2": (2, "{block}"), "block_last": (-1, "{block}")},
    example_size=("--vit-size", "tiny"),  # examples/vit_trace.py is ViT-Tiny
)
