"""Weight-aware checks on code written with nn.Modules (tests/trace_fixtures/module_vit.py), in the ways correct code
varies: half precision, a LayerNorm of the user's own whatever the order of its parameters, PyTorch classes that are
not the formula their name suggests. Correct code is never called wrong; a bug is still named first; a user's class
name is text on the pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer_trace.cli import main

SCRIPT = Path(__file__).resolve().parent / "trace_fixtures" / "module_vit.py"
OWN_LAYER_NORM = '''
class LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.offset = nn.Parameter(0.1 * torch.randn(d)); self.scale = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps
    def forward(self, x):
        mu = x.mean(-1, keepdim=True); var = x.var(-1, keepdim=True, unbiased=False)
        return (x - mu) / torch.sqrt(var + self.eps) * self.scale + self.offset
'''
HALF = ("img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01",
        "model = model.half(); img = torch.randn(2, 3, 32, 32).half()  # BREAKPOINT S01")
BFLOAT16 = ("img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01",
            "model = model.to(torch.bfloat16); img = torch.randn(2, 3, 32, 32).to(torch.bfloat16)  # BREAKPOINT S01")
OWN_LN2 = [("class ViT(nn.Module):", OWN_LAYER_NORM + "\nclass ViT(nn.Module):"),
           ("self.ln2 = nn.LayerNorm(W)", "self.ln2 = LayerNorm(W)")]


def variant(tmp_path: Path, edits: list[tuple[str, str]]) -> Path:
    source = SCRIPT.read_text(encoding="utf-8")
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    script = tmp_path / "vit_variant.py"
    script.write_text(source, encoding="utf-8")
    return script


def traced(script: Path, out: Path, status: int) -> dict:
    assert main(["trace", str(script), "--out", str(out), "--name", "t", "-q"]) == status
    return json.loads((out / "t" / "snapshots.json").read_text(encoding="utf-8"))


def failed(data: dict) -> list[str]:
    return [f"{s['label']}: {s['check']['detail']}" for s in data["snapshots"] if s["check"]["passed"] is False]


@pytest.mark.parametrize("edits", [
    [HALF], [BFLOAT16],
    [("with torch.no_grad():", "with torch.no_grad(), torch.autocast('cpu', dtype=torch.bfloat16):")],
    [("with torch.no_grad():", "with torch.inference_mode():")],  # its tensors have no version counter
    [("f = self.fc2(h)  # BREAKPOINT S18",  # a call in bfloat16, its result cast back to float32
      "f = torch.autocast('cpu', dtype=torch.bfloat16)(self.fc2)(h).float()  # BREAKPOINT S18")],
    [("k = self.k(x).view(B, N, H, HS)", "k = self.k(x.reshape(B * N, C)).view(B, N, H, HS)")],  # rows flattened
    OWN_LN2,  # its bias declared before its gain, named offset and scale
    [("self.fc2 = nn.Linear(2 * W, W)", "self.fc2 = torch.ao.nn.qat.Linear(2 * W, W, "
      "qconfig=torch.ao.quantization.get_default_qat_qconfig('fbgemm'))")],  # fake-quantised: not nn.Linear's formula
    [("self.patch = nn.Conv2d(3, W, 8, 8)", "self.patch = nn.Conv2d(3, W, 8, 8, padding=2, padding_mode='circular')")],
], ids=["float16", "bfloat16", "autocast", "inference mode", "one call autocast", "k of flattened rows",
        "own LayerNorm, bias first", "QAT Linear", "circular padding"])
def test_correct_module_code_is_never_called_wrong(tmp_path, edits):
    data = traced(variant(tmp_path, edits), tmp_path / "out", status=0)
    assert failed(data) == [] and data["outcome"]["counts"]["passed"] >= 17


@pytest.mark.parametrize("precision", [HALF, BFLOAT16], ids=["float16", "bfloat16"])
def test_in_half_precision_a_bug_is_still_named_first(tmp_path, precision):
    edits = [precision, ("f = self.fc2(h)  # BREAKPOINT S18", "f = self.fc2(F.relu(self.fc1(f_in)))  # BREAKPOINT S18")]
    data = traced(variant(tmp_path, edits), tmp_path / "out", status=1)
    assert data["outcome"]["first_failure"].startswith("S18 "), failed(data)
    assert "half precision" in failed(data)[0]


def test_a_users_class_name_is_text_on_the_pages(tmp_path):
    hostile = 'LayerNorm = type("LN|<script>alert(1)</script>\\n# H1", (LayerNorm,), {"__module__": __name__})\n'
    edits = [*OWN_LN2, ("\nclass ViT(nn.Module):", "\n" + hostile + "\nclass ViT(nn.Module):")]
    traced(variant(tmp_path, edits), tmp_path / "out", status=0)
    for page in (tmp_path / "out" / "t").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        assert "<script" not in text and "\n# H1" not in text, page


TWICE = ("with torch.no_grad():\n    logits = model(img)",
         "with torch.no_grad():\n    for step in range(2):\n        logits = model(img + step)")
TRAINING = ("with torch.no_grad():\n    logits = model(img)\nprobs = logits.softmax(-1)",
            "opt = torch.optim.SGD(model.parameters(), lr=0.5)\nfor step in range(2):\n    logits = model(img)\n"
            "    opt.zero_grad(); logits.logsumexp(-1).sum().backward(); opt.step()\n"
            "probs = logits.detach().softmax(-1)")


@pytest.mark.parametrize("edit", [TWICE, TRAINING], ids=["two inputs", "two training steps"])
def test_a_model_run_more_than_once_is_judged_on_its_first_forward_pass(tmp_path, edit):
    """Each check reads one forward pass (the first; a later one may train, with dropout), with the weights as they were
    then; the overview says which pass the report reads and what it leaves out (the probabilities made after the loop)."""
    data = traced(variant(tmp_path, [edit]), tmp_path / "out", status=0)
    assert failed(data) == [] and data["outcome"]["counts"]["passed"] >= 17
    [said] = [warning for warning in data["outcome"]["warnings"] if "the model ran 2 times" in warning]
    assert "reads the first forward pass" in said and "not shown: BREAKPOINT S26" in said
    assert "Several forward passes" in (tmp_path / "out" / "t" / "index.md").read_text(encoding="utf-8")


def test_in_the_first_of_several_forward_passes_a_bug_is_still_named_first(tmp_path):
    edits = [TWICE, ("f = self.fc2(h)  # BREAKPOINT S18", "f = self.fc2(F.relu(self.fc1(f_in)))  # BREAKPOINT S18")]
    data = traced(variant(tmp_path, edits), tmp_path / "out", status=1)
    assert data["outcome"]["first_failure"].startswith("S18 "), failed(data)


RAW_S16 = [("x = x_in + a", "x = x_in + a  # BREAKPOINT S16"),
           ("f_in = self.ln2(x)  # BREAKPOINT S16", "f_in = self.ln2(x)")]


def test_s16_marked_on_the_plain_residual_sum_before_its_layer_norm_passes_as_that_sum(tmp_path):
    data = traced(variant(tmp_path, RAW_S16), tmp_path / "out", status=0)
    assert failed(data) == []
    checks = {s["label"]: s["check"] for s in data["snapshots"]}
    assert checks["S16"]["name"].startswith("is the residual sum input + sublayer output")
    assert checks["S17"]["passed"] is True


def test_k_computed_from_another_tensor_than_q_and_v_is_named_at_s10(tmp_path):
    edits = [("k = self.k(x).view(B, N, H, HS)", "k = self.k(x.flip(1)).view(B, N, H, HS)")]
    data = traced(variant(tmp_path, edits), tmp_path / "out", status=1)
    assert data["outcome"]["first_failure"].startswith("S10 "), failed(data)
    assert "computed from another tensor than S09 and S11" in failed(data)[0]
