"""`trace` on code nobody here wrote: real public implementations (tests/trace_corpus/<entry>/, each with its LICENSE
and SOURCE.md), changed only by breakpoint comments and traced through a small driver of ours. On every one, every
marked snapshot is captured and no check fails (correct code is never called wrong); a bug planted in a copy is named
as the first failure, at the step where it happens in the model's data flow."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch

from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.trace import numberings
from transformer_trace.trace.markers import find_markers
from transformer_trace.models.legend import Legend, Quotient
from transformer_trace.trace.reading.verify import LayoutStatus, bind_dims, layout

CORPUS = Path(__file__).resolve().parent / "trace_corpus"
DRIVERS = sorted(CORPUS.glob("*/trace_driver*.py"))
ENTRIES = sorted({driver.parent for driver in DRIVERS})


def driver_id(driver: Path) -> str:
    return f"{driver.parent.name}/{driver.stem.removeprefix('trace_driver').strip('_') or 'driver'}"


def trace(driver: Path, out: Path, *extra: str, status: int = 0) -> dict:
    """Trace ``driver`` as the CLI does, into ``out``; the written snapshots.json. ``status``: the exit status expected
    (0 every check passed, 1 a check failed)."""
    assert main(["trace", str(driver), "--out", str(out), "--name", "t", "-q", *extra]) == status
    return json.loads((out / "t" / "snapshots.json").read_text(encoding="utf-8"))


def marked_labels(entry: Path, numbering: str) -> set[str]:
    """The labels of every snapshot marked in the entry's files (each alternative of a shared line too)."""
    catalogue = REPORTS[numbering]
    labels = set()
    for path in entry.rglob("*.py"):
        for marker in find_markers(path, numberings(REPORTS)):
            if marker.numbering == numbering and marker.number is not None:
                labels.update(catalogue.label(n) for n in (marker.number, *marker.alternatives))
    return labels


def verdicts(data: dict) -> dict[str, list[str]]:
    by_status: dict[str, list[str]] = {"passed": [], "failed": [], "not checkable": []}
    for snap in data["snapshots"]:
        if snap["captured"]:
            by_status[{True: "passed", False: "failed", None: "not checkable"}[snap["check"]["passed"]]].append(snap["label"])
    return by_status


def test_the_corpus_has_ten_licensed_implementations_each_with_its_source():
    licensed = [entry for entry in ENTRIES if (entry / "LICENSE").is_file()]
    assert len(licensed) >= 10
    for entry in licensed:
        source = (entry / "SOURCE.md").read_text(encoding="utf-8")
        assert "https://github.com/" in source
        assert re.search(r"^\| commit \| `[0-9a-f]{40}`", source, re.MULTILINE), f"{entry.name}: no upstream commit"
        assert any(name in source for name in ("MIT", "BSD", "Apache")), entry.name
    for entry in set(ENTRIES) - set(licensed):  # the course's own seeds: their source said, not counted
        assert "not** counted" in (entry / "SOURCE.md").read_text(encoding="utf-8"), entry.name


KNOWN_FALSE_FAILURES: dict[str, str] = {  # entry: why the trace fails its correct code today (none known)
}


def driver_params():
    for driver in DRIVERS:
        reason = KNOWN_FALSE_FAILURES.get(driver.parent.name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(driver, id=driver_id(driver), marks=marks)


@pytest.mark.parametrize("hit", ["1", "2"])
@pytest.mark.parametrize("driver", list(driver_params()))
def test_every_marked_snapshot_of_a_real_implementation_is_captured_and_no_check_fails(tmp_path, driver, hit):
    data = trace(driver, tmp_path, "--hit", hit)
    captured = {s["label"] for s in data["snapshots"] if s["captured"]}
    assert marked_labels(driver.parent, data["catalogue"]) <= captured
    assert verdicts(data)["failed"] == [], [s["check"]["detail"] for s in data["snapshots"] if s["check"]["passed"] is False]
    assert data["outcome"]["first_failure"] is None
    assert verdicts(data)["passed"], "the checks really ran"



@pytest.mark.parametrize("entry, label, page, verdict, normalisation", [
    ("rasbt_LLMs_from_scratch", "G11", "11-attention-scores-before-the-mask.md",
     "equals Q·Kᵀ, the 1/√hs applied at the softmax (G14)", "pre-norm"),
    ("pbloem_former", "G24", "24-block-output.md", "is LayerNorm(G19 + G22): a post-norm block ends with a norm",
     "post-norm"),
], ids=["the scale inside the softmax", "a post-norm block"])
def test_a_correct_form_the_checks_once_failed_passes_and_its_page_says_which(tmp_path, entry, label, page, verdict,
                                                                            normalisation):
    """rasbt's scores are Q·Kᵀ unscaled, the 1/√hs applied inside the softmax after the mask; pbloem's former is a
    post-norm GPT block: each step passes, its page names the form that held, and the overview the variant."""
    data = trace(CORPUS / entry / "trace_driver.py", tmp_path)
    check = {s["label"]: s for s in data["snapshots"]}[label]["check"]
    assert check["passed"] is True and check["name"] == verdict
    assert verdict in (tmp_path / "t" / "block" / page).read_text(encoding="utf-8")
    variants = {v["what"]: v["variant"] for v in data["outcome"]["recognised"]["variants"]}
    assert variants["Normalisation"].startswith(normalisation)


def test_an_entry_with_its_own_models_package_imports_it_under_its_upstream_name(tmp_path):
    """hyunwoongko's code is the package `models` (as upstream names it): the script's own interpreter imports that
    one, not the project's, and its marked lines are captured from those files."""
    entry = CORPUS / "hyunwoongko_transformer"
    assert "from models." in (entry / "trace_driver.py").read_text(encoding="utf-8")
    assert not (entry / "hw_models").exists()
    data = trace(entry / "trace_driver.py", tmp_path)
    sources = {snap["source"]["path"] for snap in data["snapshots"] if snap["captured"]}
    assert "models/layers/scale_dot_product_attention.py" in sources
    assert {path.split("/")[0] for path in sources} <= {"models", "trace_driver.py"}


def test_source_and_target_through_one_embedding_class_are_one_forward_pass_and_hit_2_counts_the_layers(tmp_path):
    """The Annotated Transformer embeds the source and then the target with the same Embeddings and PositionalEncoding
    code: #4 and #5 run twice in one forward pass. That is not a second pass (the decoder's steps are shown), and
    --hit 2 shows the second layer of the loops but the source's embeddings (hit 1) at #4 and #5, not the target's."""
    data = trace(CORPUS / "harvardnlp_annotated_transformer" / "trace_driver.py", tmp_path, "--hit", "2")
    assert not any("forward pass" in warning for warning in data["outcome"]["warnings"])
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert all(by_label[label]["captured"] for label in ("#20", "#24", "#40", "#41", "#42"))
    embeddings = (tmp_path / "t" / "input" / "04-input-embeddings-after-lookup.md").read_text(encoding="utf-8")
    assert "hit 1 of 2: a step outside the layer loop" in embeddings and by_label["#5"]["check"]["passed"]
    assert "hit 2 of 2" in (tmp_path / "t" / "encoder" / "06-encoder-block-input-tensor.md").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- planted bugs

AT = "the_annotated_transformer.py"

BUGS = {  # entry: [(what, file, correct text, planted text, the snapshot that must be named first, xfail reason)]
    "jadore801120_attention_is_all_you_need": [
        ("softmax over the wrong axis", "transformer/Modules.py", "F.softmax(attn, dim=-1)", "F.softmax(attn, dim=-2)", "#11", ""),
        ("missing 1/√d", "transformer/Modules.py", "torch.matmul(q / self.temperature, k", "torch.matmul(q, k", "#10", ""),
        ("mask lets a position see the next", "transformer/Models.py", "diagonal=1)).bool()", "diagonal=2)).bool()", "#25", ""),
        ("dropped residual", "transformer/SubLayers.py", "x += residual", "x = x", "#19", ""),
        ("heads merged without moving the heads axis back", "transformer/SubLayers.py",
         "q = q.transpose(1, 2).contiguous().view(sz_b, len_q, -1)", "q = q.contiguous().view(sz_b, len_q, -1)", "#13", ""),
        ("LayerNorm applied to the wrong tensor", "transformer/Models.py", "enc_output = self.layer_norm(enc_output)",
         "enc_output = self.layer_norm(self.src_word_emb(src_seq))", "#6", ""),
        ("positions added twice", "transformer/Models.py", "self.dropout(self.position_enc(enc_output))",
         "self.dropout(self.position_enc(self.position_enc(enc_output)))", "#5", ""),
    ],
    "karpathy_minGPT": [
        ("softmax over the wrong axis", "mingpt/model.py", "att = F.softmax(att, dim=-1)", "att = F.softmax(att, dim=-2)", "G14", ""),
        ("missing 1/√d", "mingpt/model.py", " * (1.0 / math.sqrt(k.size(-1)))", "", "G11", ""),
        ("mask lets a position see the next", "mingpt/model.py", "torch.tril(torch.ones(config.block_size, config.block_size))",
         "torch.tril(torch.ones(config.block_size, config.block_size), diagonal=1)", "G12", ""),
        ("heads merged without moving the heads axis back", "mingpt/model.py",
         "y = y.transpose(1, 2).contiguous().view(B, T, C)", "y = y.contiguous().view(B, T, C)", "G16", ""),
        ("positions added twice", "mingpt/model.py", "drop(tok_emb + pos_emb)", "drop(tok_emb + pos_emb + pos_emb)", "G04", ""),
        ("dropped residual", "mingpt/model.py", "x = x + self.attn(self.ln_1(x))", "x = self.attn(self.ln_1(x))", "G18", ""),
    ],
    "karpathy_llama2c": [  # the float mask ADDED to the scores (0 allowed, −inf blocked)
        ("softmax over the wrong axis", "model.py", "F.softmax(scores.float(), dim=-1)", "F.softmax(scores.float(), dim=-2)",
         "G14", ""),
        ("missing 1/√d", "model.py", " / math.sqrt(self.head_dim)", "", "G11", ""),
        ("mask lets a position see the next (additive)", "model.py", "torch.triu(mask, diagonal=1)",
         "torch.triu(mask, diagonal=2)", "G12", ""),
        ("heads merged without moving the heads axis back", "model.py",
         "output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)",
         "output = output.contiguous().view(bsz, seqlen, -1)", "G16", ""),
    ],
    "karpathy_nanoGPT": [
        ("positions added twice", "model.py", "drop(tok_emb + pos_emb)", "drop(tok_emb + pos_emb + pos_emb)", "G04", ""),
        ("heads merged without moving the heads axis back", "model.py",
         "y = y.transpose(1, 2).contiguous().view(B, T, C)", "y = y.contiguous().view(B, T, C)", "G16", ""),
    ],
    "lucidrains_vit_pytorch": [
        ("softmax over the wrong axis", "vit_pytorch/vit.py", "nn.Softmax(dim = -1)", "nn.Softmax(dim = -2)", "S13", ""),
        ("missing 1/√d", "vit_pytorch/vit.py", "k.transpose(-1, -2)) * self.scale", "k.transpose(-1, -2))", "S12", ""),
        ("positions added twice", "vit_pytorch/vit.py", "x = x + self.pos_embedding[:seq]",
         "x = x + self.pos_embedding[:seq] + self.pos_embedding[:seq]", "S07", ""),
    ],
    "lucidrains_simple_vit": [
        ("softmax over the wrong axis", "vit_pytorch/simple_vit.py", "nn.Softmax(dim = -1)", "nn.Softmax(dim = -2)", "S13", ""),
        ("missing 1/√d", "vit_pytorch/simple_vit.py", "k.transpose(-1, -2)) * self.scale", "k.transpose(-1, -2))", "S12", ""),
    ],
    "s_chh_pytorch_scratch_vit": [
        ("softmax over the wrong axis", "model.py", "torch.softmax(x_attention, dim=-1)", "torch.softmax(x_attention, dim=-2)", "S13", ""),
        ("missing 1/√d", "model.py", "x_attention /= float(self.head_embed_dim) ** 0.5", "x_attention /= 1.0", "S12", ""),
    ],
    "tintn_vision_transformer_from_scratch": [
        ("softmax over the wrong axis", "vit.py", "softmax(attention_scores, dim=-1)  # BREAKPOINT S13",
         "softmax(attention_scores, dim=-2)  # BREAKPOINT S13", "S13", ""),
        ("missing 1/√d", "vit.py", "attention_scores / math.sqrt(self.attention_head_size)  # BREAKPOINT S12",
         "attention_scores  # BREAKPOINT S12", "S12", ""),
        ("dropped residual", "vit.py", "x = x + attention_output", "x = attention_output", "S19",
         "needs the block's input S08, which only a marker on the `def forward` line could capture (issue 29 point 5)"),
    ],
    "SamLynnEvans_Transformer": [
        ("softmax over the wrong axis", "Sublayers.py", "F.softmax(scores, dim=-1)", "F.softmax(scores, dim=-2)", "#11", ""),
        ("missing 1/√d", "Sublayers.py", " /  math.sqrt(d_k)", "", "#10", ""),
        ("mask lets a position see the next (built in the driver)", "trace_driver.py", "k=1", "k=2", "#25", ""),
        ("heads merged without moving the heads axis back", "Sublayers.py", "concat = scores.transpose(1,2).contiguous()",
         "concat = scores.contiguous()", "#13", ""),
    ],
    "hyunwoongko_transformer": [
        ("softmax over the wrong axis", "models/layers/scale_dot_product_attention.py", "nn.Softmax(dim=-1)",
         "nn.Softmax(dim=-2)", "#11", ""),
        ("missing 1/√d", "models/layers/scale_dot_product_attention.py", " / math.sqrt(d_tensor)", "", "#10", ""),
        ("mask lets a position see the next", "models/model/transformer.py", "torch.tril(torch.ones(trg_len, trg_len))",
         "torch.tril(torch.ones(trg_len, trg_len), diagonal=1)", "#25", ""),
        ("dropped residual", "models/blocks/encoder_layer.py", "x = self.norm1(x + _x)", "x = self.norm1(x)", "#15", ""),
    ],
    "graykode_nlp_tutorial": [
        ("softmax over the wrong axis", "Transformer.py", "nn.Softmax(dim=-1)(scores)", "nn.Softmax(dim=-2)(scores)", "#11", ""),
        ("missing 1/√d", "Transformer.py", " / np.sqrt(d_k)", "", "#10", ""),
        ("mask lets a position see the next (True = blocked)", "Transformer.py", "np.triu(np.ones(attn_shape), k=1)",
         "np.triu(np.ones(attn_shape), k=2)", "#25", ""),
        ("heads merged without moving the heads axis back", "Transformer.py", "context = context.transpose(1, 2).contiguous()",
         "context = context.contiguous()", "#13", ""),
    ],
    "seed_002_single_head_vit": [
        ("softmax over the wrong axis", "single_head_vit.py", "torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)",
         "S13", ""),
        ("missing 1/√d", "single_head_vit.py", " / math.sqrt(self.embed_dim)", "", "S12", ""),
    ],
    "seed_002_attention_api_vit": [
        ("dropped residual", "attention_api_vit.py", "x = x + attn_out", "x = attn_out", "S16", ""),
    ],
    "seed_003_vit_tiny": [
        ("softmax over the wrong axis", "vit_tiny.py", "attn_scores.softmax(dim=-1)", "attn_scores.softmax(dim=-2)", "S13", ""),
        ("missing 1/√d", "vit_tiny.py", "k.transpose(-2, -1)) * self.scale", "k.transpose(-2, -1))", "S12", ""),
        ("heads merged without moving the heads axis back", "vit_tiny.py", "out = out.transpose(1, 2).reshape(B, N, D)",
         "out = out.reshape(B, N, D)", "S15", ""),  # named since round four: S15's projection input read against S14
    ],
    "rasbt_LLMs_from_scratch": [  # the 1/√hs applied inside the softmax, after the mask: G11 holds Q·Kᵀ unscaled
        ("missing 1/√d", "gpt.py", "torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)",
         "torch.softmax(attn_scores, dim=-1)", "G11", ""),
        ("positions added twice", "gpt.py", "x = tok_embeds + pos_embeds", "x = tok_embeds + pos_embeds + pos_embeds", "G04",
         ""),
        ("softmax over the wrong axis", "gpt.py", "keys.shape[-1]**0.5, dim=-1)", "keys.shape[-1]**0.5, dim=-2)", "G14",
         ""),
        ("mask lets a position see the next (a buffer, True = masked)", "gpt.py", "context_length), diagonal=1))",
         "context_length), diagonal=2))", "G12", ""),
        ("heads merged without moving the heads axis back", "gpt.py",
         "context_vec = (attn_weights @ values).transpose(1, 2)", "context_vec = (attn_weights @ values)", "G16", ""),
        ("dropped residual", "gpt.py", "x = x + shortcut  # Add the original input back  # BREAKPOINT G18",
         "x = x  # BREAKPOINT G18", "G18", ""),
        ("LayerNorm applied to the wrong tensor", "gpt.py", "x = self.final_norm(x)", "x = self.final_norm(tok_embeds)",
         "G25", ""),
    ],
    "pbloem_former": [  # heads folded into the batch axis (B·h, T, T); no mask tensor (mask_ fills −inf in place)
        ("positions added twice", "former/transformers.py", "x = tokens + positions  # BREAKPOINT G04",
         "x = tokens + positions + positions  # BREAKPOINT G04", "G04", ""),
        ("missing 1/√d", "former/modules.py", "dot = dot * self.scalefactor", "dot = dot", "G11", ""),
        ("softmax over the wrong axis", "former/modules.py", "dot = F.softmax(dot, dim=2)  # BREAKPOINT G14",
         "dot = F.softmax(dot, dim=1)  # BREAKPOINT G14", "G14", ""),
        ("mask lets a position see the next (no mask tensor)", "former/util/util.py", "offset=0 if mask_diagonal else 1",
         "offset=0 if mask_diagonal else 2", "G13", ""),  # no mask marked: the masked scores' own masked entries
        ("heads merged without moving the heads axis back", "former/modules.py",
         "out = out.transpose(1, 2).contiguous().view(b, t, s * h)  # BREAKPOINT G16",
         "out = out.contiguous().view(b, t, s * h)  # BREAKPOINT G16", "G16", ""),
        ("dropped residual", "former/modules.py", "x = self.norm1(attended + x)", "x = self.norm1(attended)", "G19", ""),
        ("dropped residual (the second, post-norm)", "former/modules.py", "x = self.norm2(fedforward + x)",
         "x = self.norm2(fedforward)", "G24", ""),
        ("LayerNorm applied to the wrong tensor (post-norm)", "former/modules.py", "x = self.norm2(fedforward + x)",
         "x = self.norm2(fedforward + attended)", "G24", ""),
    ],
    "omihub777_ViT_CIFAR": [
        ("upstream's 1/√C scale (not 1/√hs), caught once S13 is marked", "layers.py", "#(b,h,n,n)",
         "#(b,h,n,n)  # BREAKPOINT S13", "S13", ""),
        ("positions added twice", "vit.py", "out = out + self.pos_emb", "out = out + self.pos_emb + self.pos_emb", "S07", ""),
        ("dropped residual", "layers.py", "out = self.msa(self.la1(x)) + x", "out = self.msa(self.la1(x))", "S20",
         "missed: the attention's residual sum is written inline (no S16 to mark), and the S19/S20 line's la2 call input "
         "is not compared with S08 + S15"),
        ("LayerNorm applied to the wrong tensor", "layers.py", "out = self.mlp(self.la2(out)) + out",
         "out = self.mlp(self.la2(x)) + out", "S20", "missed: S19 needs S18 and S20 only re-adds its own operands; the "
         "la2 call recorded on the S19/S20 line is not compared with the residual sum that should feed it"),
        ("heads merged without moving the heads axis back", "layers.py", "self.o(attn.flatten(2))",
         "self.o(attn.transpose(1, 2).reshape(b, n, f))", "S15", ""),  # named since round four: the input read vs S14
        # S10 alone recomputes k from the k Linear's own input; the q and v Linears' inputs (ln_1, not captured) differ
        ("K computed from another tensor", "layers.py", "k = self.k(x)", "k = self.k(x.flip(1))", "S10", ""),
    ],
    "harvardnlp_annotated_transformer": [  # one attention() for the three uses; one embedding class for both sentences
        ("softmax over the wrong axis", AT, "p_attn = scores.softmax(dim=-1)", "p_attn = scores.softmax(dim=-2)", "#11", ""),
        ("missing 1/√d", AT, " / math.sqrt(d_k)", "", "#10", ""),
        ("mask lets a position see the next (True = allowed)", AT, "torch.triu(torch.ones(attn_shape), diagonal=1)",
         "torch.triu(torch.ones(attn_shape), diagonal=2)", "#25", ""),
        ("heads merged without moving the heads axis back", AT, "            x.transpose(1, 2)\n            .contiguous()",
         "            x\n            .contiguous()", "#13", ""),
        ("positions added twice", AT, "x = x + self.pe[:, : x.size(1)]", "x = x + 2 * self.pe[:, : x.size(1)]", "#5", ""),
        ("final LayerNorm applied to another tensor", AT, "        return self.norm(x)  # Snapshot #41",
         "        return self.norm(x + memory[:, :x.size(1)])  # Snapshot #41", "#41",
         "the evidence rule (issue 40): the Annotated Transformer's own LayerNorm of x + memory[:, :T] fits no named "
         "bug form yet, so #41 is unrecognised, not failed"),
        ("dropped residual", AT, "return x + self.dropout(sublayer(self.norm(x)))",
         # the shared SublayerConnection line is marked by no snapshot: #19 reads its stream from the input of the
         # LayerNorm the line fed the FFN with (fix20gpt), and names the residual dropped
         "return self.dropout(sublayer(self.norm(x)))", "#19", ""),
    ],
    "pytorch_vision_vit": [
        ("dropped residual", "tv/models/vision_transformer.py", "x = x + input", "x = x", "S16", ""),
        ("LayerNorm applied to the wrong tensor", "tv/models/vision_transformer.py", "y = self.ln_2(x)", "y = self.ln_2(input)",
         "S16", ""),
        ("K computed from the wrong input", "tv/models/vision_transformer.py", "self.self_attention(x, x, x,",
         "self.self_attention(x, input, x,", "S15", ""),
    ],
    "jeonsworld_ViT_pytorch": [  # the scores' two lines unmarked: S12 derived from S09, S10 and checked within S13
        ("softmax over the wrong axis", "models/modeling.py", "Softmax(dim=-1)", "Softmax(dim=-2)", "S13", ""),
        ("missing 1/√d", "models/modeling.py",
         "attention_scores = attention_scores / math.sqrt(self.attention_head_size)",
         "attention_scores = attention_scores", "S13", ""),
        ("positions added twice", "models/modeling.py", "embeddings = x + self.position_embeddings",
         "embeddings = x + self.position_embeddings + self.position_embeddings", "S07", ""),
        ("dropped residual", "models/modeling.py", "x = x + h  # BREAKPOINT S16", "x = x  # BREAKPOINT S16", "S16", ""),
        ("dropped residual (the second)", "models/modeling.py", "x = x + h  # BREAKPOINT S19", "x = x  # BREAKPOINT S19",
         "S19", ""),
        ("second residual taken from the block input (the second `h = x` left out)", "models/modeling.py",
         "        h = x\n        x = self.ffn_norm(x)", "        x = self.ffn_norm(x)", "S19", ""),
        ("K computed from the wrong input", "models/modeling.py", "mixed_key_layer = self.key(hidden_states)",
         "mixed_key_layer = self.key(mixed_query_layer)", "S10", ""),  # the key Linear's call on its unmarked line
        ("LayerNorm's output unused: the attention reads the block input", "models/modeling.py",
         "x, weights = self.attn(x)", "x, weights = self.attn(h)", "S09",
         "missed: the attention_norm output has no snapshot, and S09–S11 do not compare the q, k, v Linears' input "
         "with LayerNorm(S08)"),
        ("LayerNorm's output unused: the MLP reads the raw residual sum", "models/modeling.py",
         "x = self.ffn(x)  # BREAKPOINT S18", "x = self.ffn(h)  # BREAKPOINT S18", "S17",
         "missed: with S16 marked on the raw sum, no marked line shows what fc1 reads (S17 is not marked, and its "
         "check recomputes GELU's range only: fc1's output is not the step), and S18 reads fc2's own input"),
    ],
}


def planted(tmp_path: Path, entry: str, edits: list[tuple[str, str, str]]) -> Path:
    """A copy of the entry with each (file, correct text, planted text) substituted; its driver."""
    copy = tmp_path / entry
    shutil.copytree(CORPUS / entry, copy)
    for file, old, new in edits:
        source = (copy / file).read_text(encoding="utf-8")
        assert source.count(old) == 1, (file, old)
        (copy / file).write_text(source.replace(old, new), encoding="utf-8")
    return sorted(copy.glob("trace_driver*.py"))[0]


def bug_params():
    for entry, bugs in BUGS.items():
        for what, file, old, new, label, xfail in bugs:
            marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
            yield pytest.param(entry, file, old, new, label, id=f"{entry}: {what}", marks=marks)


@pytest.mark.parametrize("entry, file, old, new, label", list(bug_params()))
def test_a_bug_planted_in_a_real_implementation_is_named_as_the_first_failure(tmp_path, entry, file, old, new, label):
    data = trace(planted(tmp_path, entry, [(file, old, new)]), tmp_path / "out", status=1)
    assert data["outcome"]["first_failure"] is not None and data["outcome"]["first_failure"].startswith(label + " ")
    overview = (tmp_path / "out" / "t" / "index.md").read_text(encoding="utf-8")
    assert f"| First failing snapshot (pipeline order) | [{label} " in overview


def test_the_first_failure_is_the_earliest_in_the_models_data_flow_not_in_the_scripts_order(tmp_path):
    """The driver builds the target mask before the forward pass: with a mask bug there and a softmax bug in the
    encoder, the encoder's probabilities (#11) come first in the data flow, though the mask (#25) ran first."""
    driver = planted(tmp_path, "SamLynnEvans_Transformer", [("trace_driver.py", "k=1", "k=2"),
                                                             ("Sublayers.py", "F.softmax(scores, dim=-1)", "F.softmax(scores, dim=-2)")])
    data = trace(driver, tmp_path / "out", status=1)
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert by_label["#25"]["check"]["passed"] is False and by_label["#11"]["check"]["passed"] is False
    assert data["outcome"]["first_failure"].startswith("#11 ")


# ----------------------------------------------------------------------------- layouts real implementations use

@pytest.mark.parametrize("shape", [(1, 6, 6), (2, 6, 6), (2, 1, 6, 6), (1, 1, 16, 16)],
                         ids=["(1, T, T)", "(B, T, T)", "(B, 1, T, T)", "a context-size buffer"])
def test_a_mask_as_scripts_shape_it_is_read_as_the_catalogues_mask(shape):
    dims = {"B": 2, "T": 6}
    mask = torch.ones(shape[-2:]).tril().expand(shape)
    found = layout(mask, ("1", "1", "T", "T"), dims, {})
    assert found.status is LayoutStatus.LAYOUT and found.canonical is not None
    assert found.canonical.shape[-2:] == (6, 6) and found.canonical.shape[1] == 1


def test_a_mask_buffer_of_the_context_size_does_not_bind_the_sequence_length():
    legend = Legend({"B": "batch", "T": "positions", "C": "width", "h": "heads", "hs": "head size"},
                    relations=(Quotient("hs", "C", "h"),))
    named = [(("B", "T"), (2, 6)), (("1", "1", "T", "T"), (1, 1, 16, 16)), (("B", "h", "T", "hs"), (2, 4, 6, 8)),
             (("B", "T", "C"), (2, 6, 32))]
    assert bind_dims(named, legend) == {"B": 2, "T": 6, "h": 4, "hs": 8, "C": 32}


def test_one_head_without_its_heads_axis_is_read_with_h_1():
    legend = Legend({"B": "batch", "N1": "tokens", "h": "heads", "hs": "head size", "C": "width"},
                    relations=(Quotient("hs", "C", "h"),))
    named = [(("B", "N1", "C"), (2, 17, 32)), (("B", "h", "N1", "N1"), (2, 17, 17)), (("B", "h", "N1", "hs"), (2, 17, 32))]
    dims = bind_dims(named, legend)
    assert dims["h"] == 1 and dims["hs"] == 32
    found = layout(torch.zeros(2, 17, 17), ("B", "h", "N1", "N1"), dims, legend)
    assert found.status is LayoutStatus.LAYOUT and tuple(found.canonical.shape) == (2, 1, 17, 17)


def test_scores_with_the_heads_folded_into_the_batch_axis_are_read_per_head():
    """former's `torch.bmm` over (B·h, T, hs): the scores are (B·h, T, T), batch item b's head i at row b·h + i."""
    scores = torch.randn(2, 4, 6, 6)
    found = layout(scores.reshape(8, 6, 6), ("B", "h", "T", "T"), {"B": 2, "h": 4, "T": 6}, {})
    assert found.status is LayoutStatus.LAYOUT and torch.equal(found.canonical, scores)


def test_positions_expanded_over_the_batch_are_read_as_one_table_but_different_items_are_not():
    positions = torch.randn(6, 32)
    expanded = layout(positions[None].expand(2, 6, 32), ("T", "C"), {"B": 2, "T": 6, "C": 32}, {})
    assert expanded.status is LayoutStatus.LAYOUT and torch.equal(expanded.canonical, positions)
    differing = layout(torch.randn(2, 6, 32), ("T", "C"), {"B": 2, "T": 6, "C": 32}, {})
    assert differing.status is LayoutStatus.MISMATCH
