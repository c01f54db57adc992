"""Every variant the tests trace: each base as written, each correct rewrite alone, the compositions listed, each bug
rewrite alone and on top of a correct rewrite (see rewrites.py)."""

from __future__ import annotations

from tests.variants import encoder_decoder_rewrites, gpt_rewrites, vit_rewrites
from tests.variants.rewrites import NOTEBOOK, Variant

BY_BASE = {"vit": vit_rewrites, "encoder_decoder": encoder_decoder_rewrites, "gpt": gpt_rewrites}


def correct_variants() -> list[Variant]:
    found = []
    for base, module in BY_BASE.items():
        found.append(Variant(base, ()))
        found += [Variant(base, (rewrite,)) for rewrite in module.CORRECT]
        found += [Variant(base, tuple(rewrites)) for rewrites in getattr(module, "COMPOSED", ())]
    found += [Variant("vit", (NOTEBOOK,)), Variant("gpt", (NOTEBOOK,))]
    return found


def bug_variants() -> list[Variant]:
    found = []
    for base, module in BY_BASE.items():
        found += [Variant(base, (bug,)) for bug in module.BUGS]
        found += [Variant(base, tuple(rewrites)) for rewrites in module.BUGS_IN_VARIANTS]
    return found
