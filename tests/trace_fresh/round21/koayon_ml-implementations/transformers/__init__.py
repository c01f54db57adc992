"""Stub (ours, not upstream): the names koayon/ml-implementations imports from Hugging Face transformers. Nothing the
driver runs uses them but `activations.NewGELUActivation` (a GELU table entry the DeepNorm blocks, built with "gelu",
never pick); pretrained weights are never loaded."""
from . import activations, models  # noqa: F401


class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(name):
        raise NotImplementedError("transformers is stubbed: no pretrained weights")
