"""Tracing someone else's GPT (`python -m generator trace`): how students mark its snapshots, which of the catalogue's
placeholders name one pass of the block loop (generator/trace/).
What a trace checks is the catalogue's own checks."""

from generator.trace.verify import TraceSpec

TRACE = TraceSpec(
    keyword="BREAKPOINT",
    letter="G",
    passes={"block_last": (-1, "{block}")},
)
