"""The module calls a marked line makes are recorded only as far as its checks read them (issue 29 point 7: the
tracer's cost), and a module that raises inside the line leaves the calls after it recorded at their own depth."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import transformer_trace.trace as trace_package
from transformer_trace.reports import REPORTS
from transformer_trace.trace import calls_read, numberings
from transformer_trace.trace.reading.capture import run_script
from transformer_trace.trace.reading.user_files import user_files
from transformer_trace.trace.markers import scan
from tests.test_trace_corpus import trace

CORPUS = Path(__file__).resolve().parent / "trace_corpus"

MODEL = """\
    import torch
    from torch import nn
    torch.manual_seed(0)

    class Flaky(nn.Module):
        def forward(self, x):
            raise ValueError("not this time")

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.flaky, self.proj = Flaky(), nn.Linear(4, 4)

        def forward(self, x):
            for _ in range(4):  # each raises and is caught: the later calls are still the model's own
                try:
                    self.flaky(x)
                except ValueError:
                    pass
            hooks.append(len(torch.nn.modules.module._global_forward_hooks))
            return self.proj(x)

    hooks = []
    model, x = Model(), torch.randn(2, 3, 4)
    y = model(x)  # BREAKPOINT G20
    open(__file__.replace("script.py", "hooks.json"), "w").write(str(hooks))
"""


def run(tmp_path, **reads):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(MODEL), encoding="utf-8")
    capture = run_script(script, [], scan(user_files(script), numberings(REPORTS)), 60, argv0=str(script), **reads)
    assert capture.finished, capture.error
    (hits,) = capture.hits.values()
    return hits, json.loads((tmp_path / "hooks.json").read_text())


def test_calls_after_a_module_that_raised_are_recorded_at_their_own_depth(tmp_path):
    (hit,), hooks = run(tmp_path)
    recorded = {(call.module, call.depth) for call in hit.calls}
    assert ("Linear", 2) in recorded and ("Model", 1) in recorded, recorded
    assert hooks == [1]


def test_a_line_whose_checks_read_none_of_its_calls_runs_without_hooks_and_records_none(tmp_path):
    (hit,), hooks = run(tmp_path, calls_for={20: frozenset()})
    assert hit.calls == [] and hooks == [0]


def test_a_line_records_only_the_kinds_of_calls_its_checks_read(tmp_path):
    (hit,), hooks = run(tmp_path, calls_for={20: frozenset({"linear"})})
    assert [(call.kind, call.depth) for call in hit.calls] == [("linear", 2)] and hooks == [1]


def test_the_kinds_read_follow_the_checks_declarations():
    read = calls_read(REPORTS["gpt"])
    assert {"embedding"} <= read[2], "the token embedding's check reads the Embedding it called"
    assert {"linear", "conv2d", "multihead_attention"} <= read[26], "the logits: the Linear, or what stands for it"
    assert {"layer_norm", "user_norm"} <= read[25], "the final LayerNorm: PyTorch's or a LayerNorm of the user's"


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["pytorch_vision_vit", "hyunwoongko_transformer", "karpathy_minGPT",
                                   "lucidrains_simple_vit", "graykode_nlp_tutorial", "seed_003_vit_tiny"])
def test_copying_only_the_calls_the_checks_read_changes_no_verdict(entry, tmp_path, monkeypatch):
    """Where weights.py's bind reads a kind of call that calls_read does not name (CALLS_READ_WITH), this fails: an
    nn.MultiheadAttention and a Conv2d patch embedding (torchvision's ViT), a user's LayerNorm and shared attention
    lines (an encoder-decoder), Linear layers, embeddings and head splits of the projection read (minGPT); a patch
    embedding's chain of modules, the input image it was called with and a residual sum's MLP output from the module
    the line called (lucidrains), head splits checked against the Linear each line called (graykode), the class
    token's row of the sequence the line read (seed_003)."""
    driver = CORPUS / entry / "trace_driver.py"
    read_only = trace(driver, tmp_path / "read")
    monkeypatch.setattr(trace_package, "calls_read", lambda catalogue: None)  # None: every call copied
    assert trace(driver, tmp_path / "every") == read_only
