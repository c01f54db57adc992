"""Train mode (issue 40, point 5): nanoGPT traced in `.train()` with dropout 0.1 is never red, nor unrecognised, for
the randomness. A residual sum that ran through an active dropout is judged with the dropout's mask read back from the
captured tensors (zeros, and the rest scaled by 1/(1−p), p fitted), and so is the attention whose dropout acts inside
the fused attention (each query row's context read back as weights·V, each weight zeroed or scaled by one 1/(1−p)). A
bug in train mode is still named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from transformer_trace.checks.dropout import DROPOUT_CLAIM, sum_through_dropout, through_dropout
from transformer_trace.cli import main

NANO_GPT = Path(__file__).resolve().parent / "trace_corpus" / "karpathy_nanoGPT"
EVAL_MODE = "dropout=0.0, bias=True)).eval()"
TRAIN_MODE = "dropout=0.1, bias=True)).train()"


def traced_in_train_mode(tmp_path: Path, *changes: tuple[str, str]) -> tuple[int, dict[str, dict]]:
    folder = tmp_path / "nanogpt"
    shutil.copytree(NANO_GPT, folder)
    for file, old, new in (("trace_driver.py", EVAL_MODE, TRAIN_MODE), *(("model.py", *c) for c in changes)):
        text = (folder / file).read_text(encoding="utf-8")
        assert text.count(old) == 1, old
        (folder / file).write_text(text.replace(old, new), encoding="utf-8")
    code = main(["trace", str(folder / "trace_driver.py"), "--out", str(tmp_path / "out"), "--name", "t", "-q"])
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    return code, {s["label"]: s["check"] for s in data["snapshots"] if s["captured"]} | {"": data["outcome"]}


def test_nanogpt_in_train_mode_is_never_red_nor_unrecognised_for_its_dropout(tmp_path):
    code, checks = traced_in_train_mode(tmp_path)
    assert code == 0
    assert checks[""]["counts"]["failed"] == checks[""]["counts"]["unrecognised"] == 0
    for label in ("G04", "G23"):  # drop(tok_emb + pos_emb); x + mlp(...) whose mlp ends in a dropout
        assert checks[label]["passed"] is True and checks[label]["name"] == DROPOUT_CLAIM, checks[label]["detail"]
        assert "p = 0.100 fitted" in checks[label]["detail"]
    # the attention weights' dropout, inside the fused attention: its mask read back from the context (forms13a)
    assert checks["G15"]["passed"] is True, checks["G15"]["detail"]
    assert checks["G15"]["name"].startswith("is probs·V, through an active dropout on the attention weights")
    assert "p = 0.100 fitted" in checks["G15"]["detail"]


def test_a_residual_dropped_in_train_mode_is_still_named_first(tmp_path):
    code, checks = traced_in_train_mode(tmp_path, ("x = x + self.mlp(self.ln_2(x))", "x = self.mlp(self.ln_2(x))"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("G23 ")
    assert checks["G23"]["evidence"]["name"] == "residual dropped"


def test_the_dropout_mask_is_read_back_only_where_zeros_and_one_scale_explain_the_step():
    torch.manual_seed(0)
    expected = torch.randn(4, 50, dtype=torch.float64)
    kept = torch.rand(4, 50) > 0.2
    dropped = torch.where(kept, expected / 0.8, torch.zeros_like(expected))
    fit = through_dropout(dropped, expected, "x")
    assert fit is not None and abs(fit.p - 0.2) < 1e-9 and fit.zeroed == int((~kept).sum())
    assert through_dropout(expected, expected, "x") is None  # nothing dropped: eval mode, compared as it is
    assert through_dropout(torch.relu(expected), expected, "x") is None  # zeros, but no 1/(1−p) on the rest
    assert through_dropout(torch.where(kept, expected * 1.3, 0 * expected) * (1 + 0.01 * expected), expected, "x") is None
    residual = torch.randn(4, 50, dtype=torch.float64)
    assert sum_through_dropout(residual + dropped, [residual, expected]) is not None  # x + drop(sublayer)
    assert sum_through_dropout(dropped, [residual, expected]) is None  # the residual dropped is no dropout


def _causal_scores(seed: int) -> torch.Tensor:
    torch.manual_seed(seed)
    scores = torch.randn(2, 2, 6, 6, dtype=torch.float64)
    return scores.masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf"))


def test_attention_weights_through_an_active_dropout_pass_with_the_mask_read_back_not_as_broken_rows():
    from transformer_trace.checks import SoftmaxRows
    from transformer_trace.checks.dropout import SOFTMAX_DROPOUT_CLAIM
    from transformer_trace.sources import Ref, TensorDict

    scores = _causal_scores(0)
    kept = torch.rand(scores.shape) > 0.1
    weights = torch.where(kept, torch.softmax(scores, -1) / 0.9, torch.zeros_like(scores))  # nn.Dropout(0.1) in train
    result = SoftmaxRows(out=Ref("w"), scores=Ref("s"), causal=True).run(TensorDict({"w": weights, "s": scores}))
    assert result.passed is True and result.name == SOFTMAX_DROPOUT_CLAIM, result.detail
    assert "p = 0.100 fitted" in result.detail


def test_attention_weights_that_see_the_future_are_red_through_a_dropout_too():
    from transformer_trace.checks import SoftmaxRows
    from transformer_trace.sources import Ref, TensorDict

    scores = _causal_scores(1).nan_to_num(neginf=0.0)  # the bug: no mask, every key seen
    kept = torch.rand(scores.shape) > 0.1
    weights = torch.where(kept, torch.softmax(scores, -1) / 0.9, torch.zeros_like(scores))
    result = SoftmaxRows(out=Ref("w"), scores=Ref("s"), causal=True).run(TensorDict({"w": weights, "s": scores}))
    assert result.passed is False and result.evidence.message.startswith("a position sees the next")
