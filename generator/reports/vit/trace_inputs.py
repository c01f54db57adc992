"""The ViT's run inputs that name things, as a traced script's pages read them (trace/reading/run.py, ``id_labels``):
a trace knows the user's logits, not their class names, so class k is "class k". (For the integrator: this may join the
report's TraceSpec in trace.py.)"""

TRACE_INPUTS = {
    "class_names": ("classes", "K"),
}
