"""Tracing someone else's GPT (`python -m transformer_trace trace`): how students mark its snapshots, which of the
catalogue's placeholders name one pass of the block loop (generator/trace/).
What a trace checks is the catalogue's own checks."""

from transformer_trace.trace.verify import TraceSpec

TRACE = TraceSpec(
    keyword="BREAKPOINT",
    letter="G",
    passes={"block_last": (-1, "{block}")},
)
