"""The GPT's run inputs that name tokens, as a traced script's pages read them (trace/reading/run.py, ``id_labels``):
the prompt's token IDs G01 captured, labelled "ID n" rather than as bytes, since the user's tokenizer is unknown. (For
the integrator: this may join the report's TraceSpec in trace.py.)"""

TRACE_INPUTS = {
    "prompt_ids": ("values", 1),
    "prompt_bytes": ("ids", 1),
    "byte_labels": ("vocabulary", "V"),
}
