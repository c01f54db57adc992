"""Tracing someone else's GPT (`python -m generator trace`): how students mark its snapshots, what a trace checks beyond
the catalogue's own checks, and which snapshots are attention probabilities (generator/trace/)."""

from generator.trace.verify import TraceSpec, causal_mask, probabilities_of, scores_of

TRACE = TraceSpec(
    keyword="BREAKPOINT",
    letter="G",
    checks={
        11: scores_of(8, 9, heads=True),
        12: causal_mask(),
        14: probabilities_of(None, causal=True),
    },
    attention={14: ("T", "T")},
)
