"""Tracing someone else's GPT (`python -m transformer_trace trace`): how students mark its snapshots
(generator/trace/). Which of the catalogue's placeholders name one pass of the layer loop is the options'
``NAMED_PASSES``; what a trace checks is the catalogue's own checks."""

from transformer_trace.trace.reading.verify import TraceSpec

TRACE = TraceSpec(
    keyword="BREAKPOINT",
    letter="G",
)
