"""Tracing someone else's encoder–decoder (`python -m transformer_trace trace`): how students mark its snapshots
(generator/trace/). Which of the catalogue's placeholders name one pass of the layer loop is the options'
``NAMED_PASSES``; what a trace checks is the catalogue's own checks."""

from transformer_trace.report_parts import TraceInput, TraceSpec

# The encoder–decoder's run inputs that name words, as a traced script's pages read them (trace/reading/run.py,
# ``id_labels``): a trace knows the user's token IDs, not their words, so each word is labelled by its ID ("ID 4") and
# each vocabulary entry by its index.
_INPUTS = {
    "src_tokens": TraceInput("ids", 1),  # the source sentence's words: the IDs #1 captured
    "tgt_tokens": TraceInput("ids", 2),  # the target's: #2
    "src_words": TraceInput("vocabulary", "V_src"),  # the source vocabulary, index k -> "ID k"
    "tgt_words": TraceInput("vocabulary", "V"),
}

TRACE = TraceSpec(
    keyword="SNAPSHOT",
    letter="#",
    inputs=_INPUTS,
)
