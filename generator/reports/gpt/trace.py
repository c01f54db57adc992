"""Tracing someone else's GPT (`python -m transformer_trace trace`): how students mark its snapshots
(generator/trace/). Which of the catalogue's placeholders name one pass of the layer loop is the options'
``NAMED_PASSES``; what a trace checks is the catalogue's own checks."""

from transformer_trace.report_parts import TraceInput, TraceSpec

# The GPT's run inputs that name tokens, as a traced script's pages read them (trace/reading/run.py, ``id_labels``):
# the prompt's token IDs G01 captured, labelled "ID n" rather than as bytes, since the user's tokenizer is unknown.
_INPUTS = {
    "prompt_ids": TraceInput("values", 1),
    "prompt_bytes": TraceInput("ids", 1),
    "byte_labels": TraceInput("vocabulary", "V"),
}

TRACE = TraceSpec(
    keyword="BREAKPOINT",
    letter="G",
    inputs=_INPUTS,
)
