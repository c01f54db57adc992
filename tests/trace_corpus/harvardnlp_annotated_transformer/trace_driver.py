"""Driver (ours, not upstream): the Annotated Transformer's make_model at a tiny size (2 layers, d_model 32, 4 heads,
d_ff 64, vocabularies of 11), random weights, a batch of two source sentences of 7 tokens (the second padded) and
targets of 6, the masks built as the tutorial's Batch class builds them, one forward pass in eval mode.
the_annotated_transformer.py is the tutorial as one script: it imports pandas, altair, torchtext, spacy and GPUtil for
its data, training and charts, and draws a learning-rate chart when imported; where those packages are not installed,
stand-in modules that accept any use are registered first. Trace: python -m transformer_trace trace trace_driver.py"""
import importlib.machinery
import importlib.util
import sys
import types

import torch


class StandIn(types.ModuleType):
    """A module (or anything read from one) that accepts every attribute, call and iteration, and does nothing."""

    def __getattr__(self, name):
        if name.startswith("__"):  # __file__, __path__, ...: what tools (inspect) look up is absent, as on a module
            raise AttributeError(name)
        return StandIn(name)

    def __call__(self, *args, **kwargs):
        return StandIn("result")

    def __iter__(self):
        return iter(())


MISSING = {package for package in ("pandas", "altair", "torchtext", "spacy", "GPUtil")
           if importlib.util.find_spec(package) is None}
for name in ("pandas", "altair", "torchtext", "torchtext.data", "torchtext.data.functional", "torchtext.vocab",
             "torchtext.datasets", "spacy", "GPUtil"):
    if name.split(".")[0] in MISSING:
        sys.modules[name] = StandIn(name)
        sys.modules[name].__spec__ = importlib.machinery.ModuleSpec(name, None)  # torch's find_spec reads it

from the_annotated_transformer import make_model, subsequent_mask  # noqa: E402

torch.manual_seed(0)
PAD = 2  # the tutorial's blank token index
model = make_model(11, 11, N=2, d_model=32, d_ff=64, h=4).eval()
src = torch.tensor([[0, 3, 4, 5, 6, 7, 1], [0, 8, 9, 10, 1, PAD, PAD]])  # Snapshot #1
tgt = torch.tensor([[0, 3, 4, 5, 6, 7], [0, 8, 9, 10, 1, PAD]])  # Snapshot #2
src_mask = (src != PAD).unsqueeze(-2)
tgt_mask = (tgt != PAD).unsqueeze(-2) & subsequent_mask(tgt.size(-1)).type_as(src_mask.data)  # Snapshot #25
with torch.no_grad():
    out = model(src, tgt, src_mask, tgt_mask)
    logits = model.generator.proj(out)  # Snapshot #42
print("predicted", logits.argmax(-1).tolist())
