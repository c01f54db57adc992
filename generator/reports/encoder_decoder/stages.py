"""The encoder–decoder report's stages: the sections its snapshots are grouped in, in the order a pass runs them."""

from transformer_trace.catalogue import Stage

STAGES = (
    Stage("input", "Input & embedding", "From words to IDs to vectors with position information."),
    Stage("encoder", "Encoder", "One encoder layer, traced operation by operation."),
    Stage("decoder", "Decoder", "One decoder layer: masked self-attention, cross-attention over the encoder, "
                                "feed-forward."),
    Stage("output", "Output", "From the decoder's last states to scores over the target vocabulary."),
)
