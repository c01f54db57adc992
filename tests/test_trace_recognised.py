"""The overview says which architecture variant a trace recognised and what each verdict rests on: pre-norm or
post-norm (from the checks that passed on the script's own tensors), the mask's form (boolean, byte, 0/1 floats or
additive; which value means masked; its shape), attention weights without a heads axis, fused attention."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from transformer_trace.checks import CheckResult, LayerNormOf
from transformer_trace.cli import main
from transformer_trace.models.vit import EncoderBlock
from transformer_trace.places import Place
from transformer_trace.render import escape_text
from transformer_trace.sources import ModuleRef, Ref
from transformer_trace.trace.reading.variants import _normalisation, mask_form

TESTS = Path(__file__).resolve().parent
CORPUS = TESTS / "trace_corpus"


def traced(driver: Path, out: Path) -> tuple[dict[str, list[str]], str]:
    """The recognised variants (what -> [variant: rests on]) of the driver's trace, and its overview's text."""
    assert main(["trace", str(driver), "--out", str(out), "--name", "t", "-q"]) == 0
    outcome = json.loads((out / "t" / "snapshots.json").read_text(encoding="utf-8"))["outcome"]
    found: dict[str, list[str]] = {}
    for variant in outcome["recognised"]["variants"]:
        found.setdefault(variant["what"], []).append(f"{variant['variant']}: {variant['rests_on']}")
    return found, (out / "t" / "index.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("driver, variant, rests_on, mask", [
    # post-norm: the layer's output is LayerNorm(input + sublayer output); boolean padding & causal mask per item
    ("jadore801120_attention_is_all_you_need/trace_driver.py", "post-norm", "#19: equals LayerNorm(input + sublayer "
     "output)", ("Mask (#25)", "boolean, True = allowed, False = masked; shape (2, 6, 6), one per batch item")),
    ("hyunwoongko_transformer/trace_driver.py", "post-norm", "#19: equals LayerNorm(input + sublayer output)",
     ("Mask (#25)", "byte (uint8), 1 = allowed, 0 = masked; shape (2, 1, 6, 6), one per batch item, broadcast over "
                    "the heads")),
    # pre-norm: the layer ends with its residual sum (SamLynnEvans' #19: the MLP's output read from the call of the
    # statement feeding the marked line); or a final LayerNorm after the last layer
    ("SamLynnEvans_Transformer/trace_driver.py", "pre-norm", "#19: is the residual sum input + sublayer output",
     ("Mask (#25)", "boolean, True = allowed")),
    ("karpathy_minGPT/trace_driver.py", "pre-norm", "G24: is the second residual sum: a pre-norm block ends without a "
     "norm", ("Mask (G12)", "0/1 floats, 1 = allowed, 0 = masked; shape (1, 1, 16, 16), one for the whole batch")),
    # post-norm told by the LayerNorm module the marked line called on the residual sum (its own input)
    ("graykode_nlp_tutorial/trace_driver.py", "post-norm", "#19: equals LayerNorm(its input)",
     ("Mask (#25)", "boolean, True = masked; shape (2, 5, 5)")),
])
def test_the_overview_names_the_normalisation_and_the_masks_form_with_what_each_rests_on(tmp_path, driver, variant,
                                                                                         rests_on, mask):
    found, overview = traced(CORPUS / driver, tmp_path)
    [normalisation] = [v for v in found["Normalisation"] if "embeddings" not in v]
    assert normalisation.startswith(variant) and rests_on in normalisation
    assert any(v.startswith(mask[1]) for v in found[mask[0]])
    assert escape_text(variant) in overview and escape_text(mask[1]) in overview
    assert escape_text("What was recognised") in overview


def test_an_embedding_layer_norm_an_additive_mask_fused_attention_and_averaged_heads_are_named(tmp_path):
    found, _ = traced(CORPUS / "jadore801120_attention_is_all_you_need" / "trace_driver.py", tmp_path / "a")
    assert any(v.startswith("a LayerNorm between the embeddings and the first layer: #6") for v in found["Normalisation"])
    found, _ = traced(TESTS / "trace_fixtures" / "seed_style.py", tmp_path / "b")
    assert found["Mask (#25)"][0].startswith("additive, −inf = masked, 0 = allowed (added to the scores); shape "
                                              "(1, 1, 5, 5)")
    found, _ = traced(CORPUS / "karpathy_nanoGPT" / "trace_driver.py", tmp_path / "c")
    assert found["Attention weights"][0].startswith("fused (F.scaled_dot_product_attention)")
    assert ("model.py:64 calls it; the probabilities snapshot: G14 not captured, rebuilt from q and k through the "
            "scores for the checks that read it (G15, G16)") in found["Attention weights"][0]
    # the probabilities' own page says what the checks after it read, and from which captured steps
    probabilities = (tmp_path / "c" / "t" / "block" / "14-attention-probabilities-causal-softmax.md").read_text("utf-8")
    assert '!!! info "Derived from G08, G09 for the checks that read it"' in probabilities
    assert "Derived from" not in (tmp_path / "c" / "t" / "block" / "15-attention-context-per-head.md").read_text("utf-8")
    found, _ = traced(CORPUS / "seed_002_attention_api_vit" / "trace_driver.py", tmp_path / "d")
    assert found["Attention weights (S13)"] == [
        "averaged over the heads by nn.MultiheadAttention (average_attn_weights=True, its default): S13's shape "
        "(2, 17, 17) has no heads axis, and the marked line attention_api_vit.py:52 gets it from self.attn, which line "
        "25 makes an nn.MultiheadAttention; the checks read it as one head"]


@pytest.mark.parametrize("mask, form", [
    (torch.tril(torch.ones(3, 3, dtype=torch.bool)), ("boolean", "True = allowed, False = masked")),
    (~torch.tril(torch.ones(3, 3, dtype=torch.bool)), ("boolean", "True = masked")),
    (torch.tril(torch.ones(3, 3, dtype=torch.uint8)), ("byte (uint8)", "1 = allowed, 0 = masked")),
    (torch.triu(torch.full((3, 3), -1e9), diagonal=1), ("additive", "-1e+09 = masked, 0 = allowed (added to the scores)")),
    (torch.triu(torch.full((3, 3), float("-inf")), diagonal=1), ("additive", "−inf = masked, 0 = allowed (added to the "
                                                                              "scores)")),
])
def test_a_masks_form_and_the_value_that_means_masked_are_read_from_its_dtype_and_diagonal(mask, form):
    assert mask_form(mask) == form


def _page(main: Ref, check: LayerNormOf) -> SimpleNamespace:
    """A captured step showing ``main`` whose one check passed (what the normalisation reading looks at)."""
    return SimpleNamespace(snap=SimpleNamespace(tensors=(main,), checks=(check,)), label="S01",
                           checks=(CheckResult(name="equals LayerNorm(its input)", passed=True, detail="max |Δ| 0"),))


@pytest.mark.parametrize("main, normalisation", [
    # declared a layer's output (the ViT block's OUTPUT point), under a record name of its own
    (Ref("{layer}.leaving_the_layer", Place("{layer}", EncoderBlock).OUTPUT.roles),
     ["post-norm (LayerNorm after each residual sum)"]),
    # named like a layer's output, not declared one: nothing is read from a name
    (Ref("{layer}.output"), ["not recognised"]),
])
def test_the_normalisation_is_read_from_the_steps_declared_a_layers_output_not_from_their_names(main, normalisation):
    check = LayerNormOf(x=Ref("{layer}.residual_2"), module=ModuleRef("{layer}.ln_2"))
    found = _normalisation([_page(main, check)])
    assert [r.variant for r in found if r.what == "Normalisation"] == normalisation
