"""Tracing someone else's ViT (`python -m transformer_trace trace`): how students mark its snapshots
(generator/trace/). Which of the catalogue's placeholders name one pass of the layer loop is the options'
``NAMED_PASSES``; what a trace checks is the catalogue's own checks."""

from transformer_trace.report_parts import TraceInput, TraceSpec

# The ViT's run inputs that name things, as a traced script's pages read them (trace/reading/run.py, ``id_labels``):
# a trace knows the user's logits, not their class names, so class k is "class k".
_INPUTS = {
    "class_names": TraceInput("classes", "K"),
}

TRACE = TraceSpec(
    keyword="BREAKPOINT",
    letter="S",
    example_size=("--vit-size", "tiny"),  # examples/vit_trace.py is ViT-Tiny
    inputs=_INPUTS,
)
