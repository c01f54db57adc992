"""The encoder–decoder's run inputs that name words, as a traced script's pages read them (trace/reading/run.py,
``id_labels``): a trace knows the user's token IDs, not their words, so each word is labelled by its ID ("ID 4") and
each vocabulary entry by its index. (For the integrator: this may join the report's TraceSpec in trace.py.)"""

TRACE_INPUTS = {
    "src_tokens": ("ids", 1),  # the source sentence's words: the IDs #1 captured
    "tgt_tokens": ("ids", 2),  # the target's: #2
    "src_words": ("vocabulary", "V_src"),  # the source vocabulary, index k -> "ID k"
    "tgt_words": ("vocabulary", "V"),
}
