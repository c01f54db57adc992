"""The encoder-decoder model: faithful to seed report 001, equal to torch.nn, recorded where computed."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from tests.conftest import run_report
from transformer_trace.models.encoder_decoder import EncoderDecoderConfig, EncoderDecoderTransformer, build_vocab, causal_mask, encode
from transformer_trace.models.recording import recording

SRC, TGT = "hello from cairo egypt team project", "we are debugging transformer today"


def seeded_model(seed: int = 7) -> tuple[EncoderDecoderTransformer, torch.Tensor, torch.Tensor]:
    src_vocab, tgt_vocab = build_vocab(SRC), build_vocab(TGT)
    torch.manual_seed(seed)
    model = EncoderDecoderTransformer(EncoderDecoderConfig(len(src_vocab), len(tgt_vocab))).eval()
    return model, torch.tensor([encode(SRC, src_vocab)]), torch.tensor([encode(TGT, tgt_vocab)])


def test_vocabularies_are_sorted_unique_words_as_in_the_seed():
    assert encode(SRC, build_vocab(SRC)) == [3, 2, 0, 1, 5, 4]
    assert encode(TGT, build_vocab(TGT)) == [4, 0, 1, 3, 2]


def test_seed_7_reproduces_every_value_the_seed_report_printed():
    model, src, tgt = seeded_model()
    with torch.no_grad(), recording() as rec:
        logits = model(src, tgt)
    layer = "encoder.layers.0.self_attn"
    expected = {
        "embedding row 0": (model.src_emb.weight.detach()[0, :5], [-0.8201, 0.3956, 0.8989, -1.3884, -0.1670]),
        "embedding row 1": (model.src_emb.weight.detach()[1, :5], [0.5689, 0.1333, 0.5600, -0.7351, -0.2240]),
        "Q position 0": (rec.tensor(f"{layer}.q")[0, 0, :5], [0.4812, 0.4072, 0.2930, 0.2615, 0.1780]),
        "K position 0": (rec.tensor(f"{layer}.k")[0, 0, :5], [0.9222, -0.3941, 0.1355, -0.0960, 0.0649]),
        "V position 0": (rec.tensor(f"{layer}.v")[0, 0, :5], [0.6484, 0.8031, 1.2474, 0.1291, -0.9287]),
        "weights head 1 query 1": (rec.tensor(f"{layer}.probs")[0, 0, 0], [0.2210, 0.1557, 0.1620, 0.1860, 0.1135, 0.1618]),
        "logits position 0": (logits[0, 0, :3], [-0.1160, 0.8900, -0.3211]),
    }
    for what, (actual, printed) in expected.items():
        assert [round(float(v), 4) for v in actual] == printed, what


def _torch_layers(model: EncoderDecoderTransformer) -> tuple[list[nn.TransformerEncoderLayer], list[nn.TransformerDecoderLayer]]:
    cfg = model.cfg
    kwargs = dict(d_model=cfg.d_model, nhead=cfg.n_heads, dim_feedforward=cfg.d_ff, dropout=0.0, activation="relu", batch_first=True, norm_first=False)

    def copy_attention(ours, theirs: nn.MultiheadAttention) -> None:
        theirs.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
        theirs.out_proj.load_state_dict(ours.W_o.state_dict())

    encoders, decoders = [], []
    with torch.no_grad():
        for ours in model.encoder["layers"]:
            ref = nn.TransformerEncoderLayer(**kwargs).eval()
            copy_attention(ours.self_attn, ref.self_attn)
            ref.linear1.load_state_dict(ours.mlp.fc1.state_dict())
            ref.linear2.load_state_dict(ours.mlp.fc2.state_dict())
            ref.norm1.load_state_dict(ours.ln_1.state_dict())
            ref.norm2.load_state_dict(ours.ln_2.state_dict())
            encoders.append(ref)
        for ours in model.decoder["layers"]:
            ref = nn.TransformerDecoderLayer(**kwargs).eval()
            copy_attention(ours.self_attn, ref.self_attn)
            copy_attention(ours.cross_attn, ref.multihead_attn)
            ref.linear1.load_state_dict(ours.mlp.fc1.state_dict())
            ref.linear2.load_state_dict(ours.mlp.fc2.state_dict())
            for mine, theirs in ((ours.ln_1, ref.norm1), (ours.ln_2, ref.norm2), (ours.ln_3, ref.norm3)):
                theirs.load_state_dict(mine.state_dict())
            decoders.append(ref)
    return encoders, decoders


@pytest.mark.parametrize("seed", [7, 123])
def test_layers_equal_torch_nn_transformer_layers_with_the_same_weights(seed):
    model, src, tgt = seeded_model(seed)
    encoders, decoders = _torch_layers(model)
    with torch.no_grad(), recording() as rec:
        logits = model(src, tgt)
        x = rec.tensor("src_with_pos")
        for layer in encoders:
            x = layer(x)
        y = rec.tensor("tgt_with_pos")
        mask = causal_mask(tgt.size(1))[0, 0]  # (T, T) float mask, as torch.nn expects
        for layer in decoders:
            y = layer(y, x, tgt_mask=mask)
        ref_logits = model.out_proj(y)
    assert (rec.tensor("memory") - x).abs().max() <= 1e-5
    assert (rec.tensor("dec_final") - y).abs().max() <= 1e-5
    assert (logits - ref_logits).abs().max() <= 1e-5


def test_recording_off_gives_a_plain_model_and_leaves_nothing_on_modules():
    model, src, tgt = seeded_model()
    with torch.no_grad():
        plain = model(src, tgt)
        with recording() as rec:
            recorded = model(src, tgt)
    assert torch.equal(plain, recorded)
    assert len(rec) > 40
    for module in model.modules():
        assert not any(isinstance(v, torch.Tensor) and not isinstance(v, nn.Parameter) for k, v in vars(module).items() if k != "_buffers")


def test_recorded_source_lines_point_at_the_statement_that_computed_the_tensor():
    model, src, tgt = seeded_model()
    with torch.no_grad(), recording() as rec:
        model(src, tgt)
    for name, entry in rec.items():
        line = entry.file.read_text().splitlines()[entry.line - 1]
        point = name.rsplit(".", 1)[-1]
        assert re.search(rf"record\(self, self\.{point.upper()}, ", line), (name, line)  # its declared Point, e.g. self.Q


def test_recording_keeps_only_the_requested_names():
    model, src, tgt = seeded_model()
    with torch.no_grad(), recording(keep={"logits", "encoder.layers.1.self_attn.q"}) as rec:
        model(src, tgt)
    assert set(rec) == {"logits", "encoder.layers.1.self_attn.q"}


def test_shapes_follow_a_seven_word_source():
    run = run_report("encoder-decoder", src="one two three four five six seven", tgt="a b c d")
    assert run.t("src_embed").shape == (1, 7, 128)
    assert run.t("{enc}.self_attn.probs").shape == (1, 4, 7, 7)
    assert run.t("{dec}.cross_attn.probs").shape == (1, 4, 4, 7)
    assert run.t("logits").shape == (1, 4, 4)


def test_any_layer_can_be_traced():
    run = run_report("encoder-decoder", layer=2)
    assert run.name("{enc}.input") == "encoder.layers.1.input"
    assert torch.equal(run.t("{enc}.input"), run.t("encoder.layers.0.output"))
