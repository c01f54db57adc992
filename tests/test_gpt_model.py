"""The byte-level GPT: equal to torch.nn with the same weights, records what it declares, caches faithfully."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from transformer_trace.models.gpt import GPT, GPTConfig, KVCache, byte_label, decode, encode
from transformer_trace.models.recording import declared_points, recording

PROMPTS = ["Hello, world!", "café 中文 🙂"]


def seeded_model(seed: int = 7, **sizes) -> GPT:
    torch.manual_seed(seed)
    return GPT(GPTConfig(**sizes)).eval()


def as_ids(*texts: str) -> torch.Tensor:
    return torch.tensor([encode(t) for t in texts])  # (B, T); texts of equal byte length


def plain_pass_points(model: GPT) -> dict[str, tuple[str, ...]]:
    """The declared points of a plain forward pass (generation's have the scope "generate"), with their named shapes."""
    return {name: d.shape for name, d in declared_points(model).items() if not d.point.scope}


def sizes(cfg: GPTConfig, **extra: int) -> dict[str, int]:
    """The number each shape symbol stands for."""
    return {
        "1": 1, "C": cfg.d_model, "3·C": 3 * cfg.d_model, "h": cfg.n_heads, "hs": cfg.head_size,
        "M": cfg.mlp_dim, "V": cfg.vocab_size, **extra,
    }


def reference_logits(model: GPT, ids: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits of torch.nn's pre-norm encoder layers under a causal mask, with our weights; and each layer's output."""
    cfg = model.cfg
    T = ids.size(1)
    x = model.tok_emb.weight[ids] + model.pos_emb.weight[:T]  # (B, T, C)
    mask = nn.Transformer.generate_square_subsequent_mask(T)  # (T, T) float, -inf above the diagonal
    outputs = []
    for ours in model.blocks:
        ref = nn.TransformerEncoderLayer(
            cfg.d_model, cfg.n_heads, dim_feedforward=cfg.mlp_dim, dropout=0.0, activation="gelu",
            layer_norm_eps=cfg.layer_norm_eps, batch_first=True, norm_first=True,
        ).eval()
        ref.self_attn.in_proj_weight.copy_(ours.attn.qkv.weight)
        ref.self_attn.in_proj_bias.copy_(ours.attn.qkv.bias)
        ref.self_attn.out_proj.load_state_dict(ours.attn.proj.state_dict())
        ref.linear1.load_state_dict(ours.mlp.fc1.state_dict())
        ref.linear2.load_state_dict(ours.mlp.fc2.state_dict())
        ref.norm1.load_state_dict(ours.ln_1.state_dict())
        ref.norm2.load_state_dict(ours.ln_2.state_dict())
        x = ref(x, src_mask=mask, is_causal=True)
        outputs.append(x)
    ln_f = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
    ln_f.load_state_dict(model.ln_f.state_dict())
    return ln_f(x) @ model.tok_emb.weight.T, outputs  # (B, T, V), the tied head


@pytest.mark.parametrize("record_on", [False, True], ids=["plain", "recorded"])
@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("seed", [7, 123])
def test_logits_equal_torch_nn_pre_norm_layers_with_a_causal_mask(seed, prompt, record_on):
    model = seeded_model(seed)
    ids = as_ids(prompt, prompt[::-1])
    with torch.no_grad():
        expected, layer_outputs = reference_logits(model, ids)
        if record_on:
            with recording() as rec:
                logits = model(ids)
            for i, out in enumerate(layer_outputs):
                assert (rec.tensor(f"blocks.{i}.output") - out).abs().max() <= 1e-5
        else:
            logits = model(ids)
    assert (logits - expected).abs().max() <= 1e-5


@pytest.mark.parametrize("cfg", [GPTConfig(), GPTConfig(d_model=96, n_heads=3, n_layers=3, mlp_dim=200)], ids=["default", "3-layers"])
def test_a_forward_pass_records_exactly_the_declared_points_with_their_shapes(cfg):
    torch.manual_seed(7)
    model = GPT(cfg).eval()
    ids = as_ids("abcdefg", "hijklmn")
    with torch.no_grad(), recording() as rec:
        model(ids)
    points = plain_pass_points(model)
    assert set(rec) == set(points)
    n = sizes(cfg, B=2, T=7)
    for name, shape in points.items():
        assert tuple(rec.tensor(name).shape) == tuple(n[s] for s in shape), name
    assert rec.tensor("ids").dtype == torch.long and rec.tensor("mask").dtype == torch.bool


def test_generation_records_the_prompt_pass_and_its_declared_points():
    model = seeded_model()
    ids = as_ids("Once upon")
    with torch.no_grad(), recording() as rec:
        model.generate(ids, 5)
    points = {name: d.shape for name, d in declared_points(model).items()}
    assert set(rec) == set(points) and set(points) - set(plain_pass_points(model)) == {name for name in points if name.startswith("generate.")}
    n = sizes(model.cfg, B=1, T=9, N=5, S=9 + 5 - 1)
    for name, shape in points.items():
        assert tuple(rec.tensor(name).shape) == tuple(n[s] for s in shape), name
    with torch.no_grad(), recording() as plain:
        model(ids)
    for name in plain_pass_points(model):
        assert torch.equal(rec.tensor(name), plain.tensor(name)), name  # the prompt's pass, not a later step's


def test_recorded_source_lines_point_at_the_statement_that_computed_the_tensor():
    model = seeded_model()
    with torch.no_grad(), recording() as rec:
        model.generate(as_ids("hi"), 2)
    for name, entry in rec.items():
        line = entry.file.read_text().splitlines()[entry.line - 1]
        point = name.rsplit(".", 1)[-1]
        assert re.search(rf"record\(\w+, \w+\.{point.upper()}, ", line), (name, line)  # its declared Point, e.g. self.QKV


def test_attention_masks_later_positions_and_probabilities_are_rows_summing_to_one():
    model = seeded_model()
    with torch.no_grad(), recording() as rec:
        model(as_ids("causal"))
    T = 6
    assert torch.equal(rec.tensor("mask")[0, 0], torch.ones(T, T, dtype=torch.bool).tril())
    probs = rec.tensor("blocks.1.attn.probs")
    assert torch.all(probs.triu(diagonal=1) == 0)
    assert torch.allclose(probs.sum(-1), torch.ones(1, 4, T))
    masked = rec.tensor("blocks.0.attn.masked_scores")
    assert torch.all(masked.isneginf() == ~rec.tensor("mask"))


@pytest.mark.parametrize("prompt, changed", [("Hello, world!", "Hello, world?"), ("naïve", "naïvE")])
def test_changing_the_last_byte_leaves_every_earlier_position_unchanged(prompt, changed):
    model = seeded_model()
    cfg = model.cfg
    runs = []
    for text in (prompt, changed):
        with torch.no_grad(), recording() as rec:
            model(as_ids(text))
        runs.append(rec)
    T = len(encode(prompt))
    points = plain_pass_points(model)
    for name, shape in points.items():
        # Keep the first T - 1 positions along every T axis (a (B, h, T, T) tensor: rows and columns).
        index = tuple(slice(0, T - 1) if s == "T" else slice(None) for s in shape)
        before, after = runs[0].tensor(name)[index], runs[1].tensor(name)[index]
        torch.testing.assert_close(after, before, atol=1e-6, rtol=0, msg=name)
    for i in range(cfg.n_layers):
        # Whole rows of probabilities: earlier queries give the changed last byte exactly 0.
        name = f"blocks.{i}.attn.probs"
        torch.testing.assert_close(runs[1].tensor(name)[..., : T - 1, :], runs[0].tensor(name)[..., : T - 1, :], atol=1e-6, rtol=0)
    assert not torch.equal(runs[0].tensor("logits")[:, -1], runs[1].tensor("logits")[:, -1])


@pytest.mark.parametrize("prompts, n_new", [(["Hello"], 20), (["café", "🙂!"], 12)])
@pytest.mark.parametrize("seed", [7, 123])
def test_greedy_generation_with_the_kv_cache_matches_recomputing_from_scratch(seed, prompts, n_new):
    model = seeded_model(seed)
    ids = as_ids(*prompts)
    B, T = ids.shape
    new_ids, info = model.generate(ids, n_new)
    assert new_ids.shape == (B, n_new)
    assert info.cached_logits.shape == info.recomputed_logits.shape == (B, n_new, 256)
    assert (info.cached_logits - info.recomputed_logits).abs().max() <= 1e-5
    assert torch.equal(new_ids, info.recomputed_logits.argmax(dim=-1))
    # Step by step, from scratch: each byte is the argmax after the prompt and the bytes before it.
    with torch.no_grad():
        full = model(torch.cat([ids, new_ids[:, :-1]], dim=1))  # (B, T + N - 1, V)
    assert torch.equal(new_ids, full[:, T - 1 :].argmax(dim=-1))
    assert info.cache.length == T + n_new - 1
    for k, v in info.cache.layers:
        assert k.shape == v.shape == (B, 4, T + n_new - 1, 32)
    with torch.no_grad(), recording():
        again, _ = model.generate(ids, n_new)
    assert torch.equal(again, new_ids)  # recording changes nothing


def test_a_recorded_pass_over_the_cache_attends_to_every_earlier_position():
    model = seeded_model()
    ids = as_ids("Hello", "world")
    cache = KVCache()
    with torch.no_grad(), recording() as rec:
        model(ids[:, :3], cache)
        step = model(ids[:, 3:], cache)  # (B, 2, V): positions 3 and 4 over 3 cached ones
    with torch.no_grad():
        full = model(ids)
    assert cache.length == 5
    assert (step - full[:, 3:]).abs().max() <= 1e-5
    assert rec.tensor("blocks.0.attn.probs").shape == (2, 4, 2, 5)
    assert torch.equal(rec.tensor("mask")[0, 0], torch.tensor([[True, True, True, True, False], [True] * 5]))
    assert torch.equal(rec.tensor("pos_emb"), model.pos_emb.weight[3:5])


@pytest.mark.parametrize("text, n_bytes", [("café", 5), ("中文", 6), ("🙂", 4), ("a b\n", 4)])
def test_non_ascii_text_is_one_token_per_utf8_byte_and_round_trips(text, n_bytes):
    ids = encode(text)
    assert len(ids) == n_bytes and all(0 <= i < 256 for i in ids)
    assert decode(ids) == text
    with torch.no_grad(), recording() as rec:
        seeded_model()(as_ids(text))
    assert rec.tensor("ids").shape == (1, n_bytes)


def test_byte_labels_and_partial_utf8_sequences():
    assert [byte_label(i) for i in encode("a ~")] == ["a", "␠", "~"]
    assert [byte_label(i) for i in encode("é\n")] == ["0xC3", "0xA9", "0x0A"]
    assert byte_label(0) == "0x00" and byte_label(255) == "0xFF"
    with pytest.raises(ValueError):
        byte_label(256)
    assert decode(encode("中")[:2]) == "\ufffd"  # a cut character is replaced, not an error


def test_prompts_longer_than_the_context_are_refused_with_a_clear_message():
    model = seeded_model()
    with pytest.raises(ValueError, match="context of 256"):
        model(torch.zeros(1, 257, dtype=torch.long))
    with pytest.raises(ValueError, match="context of 256"):
        model.generate(torch.zeros(1, 250, dtype=torch.long), 8)
    with pytest.raises(ValueError, match="empty"):
        model(torch.zeros(1, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(d_model=130, n_heads=4)


def test_weights_depend_on_the_seed_only_not_on_the_prompt():
    first = seeded_model(7)
    with torch.no_grad():
        first(as_ids("one prompt"))
    second = seeded_model(7)
    with torch.no_grad():
        second(as_ids("another, longer prompt"))
    a, b = first.state_dict(), second.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(seeded_model(8).tok_emb.weight, first.tok_emb.weight)


def test_the_head_is_tied_to_the_token_embedding_and_counted_once():
    model = seeded_model()
    cfg = model.cfg
    assert model.lm_head.weight is model.tok_emb.weight
    C, M, V = cfg.d_model, cfg.mlp_dim, cfg.vocab_size
    per_block = 2 * 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + (C * M + M) + (M * C + C)
    expected = V * C + cfg.context * C + cfg.n_layers * per_block + 2 * C
    assert sum(p.numel() for p in model.parameters()) == expected
    assert cfg.mlp_dim == 4 * C == 512
