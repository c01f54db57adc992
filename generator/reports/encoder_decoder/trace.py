"""Tracing someone else's encoder–decoder (`python -m transformer_trace trace`): how students mark its snapshots, which
of the catalogue's placeholders name one pass of the layer loop (generator/trace/). What a trace checks is the
catalogue's own checks."""

from transformer_trace.trace.verify import TraceSpec

TRACE = TraceSpec(
    keyword="SNAPSHOT",
    letter="#",
    passes={"dec_last": (-1, "{dec}.output")},
)
