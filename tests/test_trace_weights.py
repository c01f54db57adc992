"""Weight-aware checks (issue 29 point 4): the `nn.Module` calls a marked line makes are recorded while it runs (hooks
only then), their weights written once, and the steps they compute are checked from the module's own weights and
from the snapshot that should feed them: over the corpus of real implementations few captured steps stay "not
checkable", none is failed, and bugs only weights reveal are named as the first failure."""

from __future__ import annotations

import json
import textwrap

import pytest

from transformer_trace.reports import REPORTS
from transformer_trace.trace import numberings
from transformer_trace.trace.capture import run_script, user_files
from transformer_trace.trace.markers import scan
from tests.test_trace_corpus import DRIVERS, driver_id, planted, trace, verdicts

MOST_NOT_CHECKABLE = 0.15  # of the captured steps over the corpus (issue 29 point 4)


def test_a_marked_lines_module_calls_are_recorded_with_their_weights_once_and_no_hook_outlives_the_line(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from torch import nn
        torch.manual_seed(0)
        layer = nn.Linear(4, 4)
        x = torch.randn(2, 3, 4)
        hooks = []
        for _ in range(3):
            y = layer(x)  # BREAKPOINT G20
            hooks.append(len(torch.nn.modules.module._global_forward_hooks))
        z = layer(y)
        open(__file__.replace("script.py", "hooks.json"), "w").write(str(hooks))
    """), encoding="utf-8")
    capture = run_script(script, [], scan(user_files(script), numberings(REPORTS)), 60, argv0=str(script))
    assert capture.finished, capture.error
    (hits,) = capture.hits.values()
    assert len(hits) == 3 and all(len(hit.calls) == 1 and hit.calls[0].kind == "linear" for hit in hits)
    weights = [hit.calls[0].params["weight"] for hit in hits]
    assert weights[0] is weights[1] is weights[2], "a weight shared by many hits is read back once"
    assert weights[0].shape == (4, 4) and hits[0].calls[0].inputs[0].shape == (2, 3, 4)
    assert json.loads((tmp_path / "hooks.json").read_text()) == [0, 0, 0], "no hook outside the marked line"


@pytest.fixture(scope="module")
def corpus_counts(tmp_path_factory) -> dict[str, int]:
    """Passed / failed / not checkable captured steps over every corpus driver (--hit 1); no check fails on any."""
    counts = {"passed": 0, "failed": 0, "not checkable": 0}
    out = tmp_path_factory.mktemp("corpus")
    for driver in DRIVERS:
        (out / driver_id(driver)).parent.mkdir(parents=True, exist_ok=True)
        found = verdicts(trace(driver, out / driver_id(driver)))
        assert found["failed"] == [], driver_id(driver)
        for status, labels in found.items():
            counts[status] += len(labels)
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("most", [
    pytest.param(0.20, id="at most 20% (reached: 16-18%)"),
    pytest.param(MOST_NOT_CHECKABLE, id="at most 15% (issue 29's target)", marks=pytest.mark.xfail(
        strict=True, reason="not reached: the ViTs' input image (S01, no run facts in a trace), blocks whose MLP "
        "output or final LayerNorm is not marked (S19, S24) and patch embeddings computed on an unmarked line (S04) "
        "stay not checkable")),
])
def test_few_captured_steps_of_the_corpus_are_not_checkable_and_none_fails(corpus_counts, most):
    fraction = corpus_counts["not checkable"] / sum(corpus_counts.values())
    assert fraction <= most, f"{fraction:.1%} not checkable: {corpus_counts}"


# K computed from the wrong input (nn.MultiheadAttention, torchvision's ViT) is in test_trace_corpus.py's BUGS
WEIGHT_BUGS = [  # (entry, file, correct text, planted text, the snapshot named first)
    pytest.param("hyunwoongko_transformer", "models/layers/layer_norm.py", "out = self.gamma * out + self.beta",
                 "out = self.beta * out + self.gamma", "#15",
                 id="a LayerNorm class of its own with a wrong formula (gain and bias swapped)"),
]


@pytest.mark.parametrize("entry, file, old, new, label", WEIGHT_BUGS)
def test_a_bug_only_the_weights_reveal_is_named_as_the_first_failure(tmp_path, entry, file, old, new, label):
    data = trace(planted(tmp_path, entry, [(file, old, new)]), tmp_path / "out", status=1)
    assert data["outcome"]["first_failure"].startswith(label + " ")
    failed = next(s for s in data["snapshots"] if s["label"] == label)["check"]
    assert "weights" in failed["detail"] or "called" in failed["detail"], failed["detail"]
