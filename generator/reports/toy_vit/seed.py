"""Seed 004's printed numbers, the weights they give the model, and every printed result set beside the run's own.

seed_004.csv holds each number the seed printed, transcribed once, with the line of the seed it is on: the inputs
of its worked example (image, E, [CLS], positions, W₁, b₁, W₂, b₂, W_cls, b_cls) and every result it computed by
hand. Nothing here types a result: the model's value is read from the run, and the seed's own arithmetic is
redone from the seed's own printed inputs, so each disagreement is told apart as

    slip      the seed's printed inputs do not give its printed result (an arithmetic slip at this step);
    carried   the seed's arithmetic is right, but the inputs it starts from already differ from the model's;
    method    its arithmetic and inputs are right, but the seed computes this step differently (said in `method`);

"agrees" means every printed digit is the model's value rounded as the seed rounds it (its own number of decimals).
"""

from __future__ import annotations

import csv
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from transformer_trace.places import Place
from transformer_trace.sources import Ref
from transformer_trace.models.toy_vit import MLP, EncoderBlock, PatchEmbedding, SelfAttention, ToyVisionTransformer

TABLE = Path(__file__).resolve().with_name("seed_004.csv")
SEED_FILE = "004_a53975baff318064.txt"  # the seed document the line numbers refer to
TOKENS = ("[CLS]", "A", "B", "C", "D", "E", "F", "G", "H", "I")  # position 0 is [CLS], then the patches row by row
PATCHES = TOKENS[1:]
QUERY = TOKENS.index("E")  # the seed follows patch E (the centre) through attention and the MLP
CLASSES = ("cat", "dog", "bird")
SLACK = 1e-9  # float noise: 0.145 is 0.14500000000000002 in binary


@dataclass(frozen=True)
class Printed:
    """One row of seed_004.csv: a vector (or a single number) exactly as the seed printed it."""

    entry: str
    item: str
    line: int
    text: tuple[str, ...]

    @property
    def values(self) -> torch.Tensor:
        return torch.tensor([float(v) for v in self.text], dtype=torch.float64)

    @property
    def decimals(self) -> int:
        """The seed's rounding for this row: the most decimals it wrote in it (a bare "0" beside "0.1" is 0.0)."""
        return max(len(v.partition(".")[2]) for v in self.text)


@functools.cache
def printed() -> dict[str, tuple[Printed, ...]]:
    rows: dict[str, list[Printed]] = {}
    with TABLE.open(encoding="utf-8", newline="") as table:
        for row in csv.DictReader(table):
            rows.setdefault(row["entry"],
                            []).append(Printed(row["entry"], row["item"], int(row["line"]),
                                               tuple(row["values"].split())))
    return {entry: tuple(items) for entry, items in rows.items()}


def matrix(entry: str) -> torch.Tensor:
    """An entry's printed rows stacked: (items, values), float64."""
    return torch.stack([p.values for p in printed()[entry]])


def image() -> torch.Tensor:
    return matrix("image").view(1, 1, 6, 6).float()  # (6 rows, 6 columns) -> (B, Ch, H, W)


def state_dict(cfg: Any) -> dict[str, torch.Tensor]:
    """The model's weights from the seed: E, [CLS], the positional table, the MLP and the head as printed; the
    attention projections the identity with zero bias (the seed's Q₅ = x⁰₅, Kⱼ = Vⱼ = x⁰ⱼ, and its new E is
    the weighted sum itself), LayerNorm's scale 1 and shift 0 (the seed's normalised = (x − mean) / std)."""
    C, N1 = cfg.d_model, cfg.n_patches + 1
    eye, zeros, ones = torch.eye(C), torch.zeros(C), torch.ones(C)
    state = {
        "patch_embed.proj.weight": matrix("E_matrix").T,  # x @ E: nn.Linear keeps Eᵀ, (C, Ch·P·P)
        "class_token": matrix("cls_token").view(1, 1, C),  # (1, C) -> (1, 1, C)
        "pos_embedding": matrix("pos").view(1, N1, C),  # (N1, C) -> (1, N1, C)
        "head.weight": matrix("W_cls").T,  # (C, K) -> (K, C)
        "head.bias": matrix("b_cls")[0],
    }
    for i in range(cfg.n_layers):
        path = f"blocks.{i}"
        for projection in ("query", "key", "value", "proj"):
            state |= {f"{path}.attn.{projection}.weight": eye, f"{path}.attn.{projection}.bias": zeros}
        for norm in ("ln_1", "ln_2"):
            state |= {f"{path}.{norm}.weight": ones, f"{path}.{norm}.bias": zeros}
        # (C, M) -> (M, C)
        state |= {f"{path}.mlp.fc1.weight": matrix("W1").T, f"{path}.mlp.fc1.bias": matrix("b1")[0],
                  # (M, C) -> (C, M)
                  f"{path}.mlp.fc2.weight": matrix("W2").T, f"{path}.mlp.fc2.bias": matrix("b2")[0]}
    return {name: value.float() for name, value in state.items()}


# ----------------------------------------------------------------------------- the seed's own arithmetic


def _softmax(x: torch.Tensor) -> torch.Tensor:
    return x.softmax(dim=-1)


def _normalise(x: torch.Tensor) -> torch.Tensor:
    """The seed's LayerNorm: (x − mean) / std over the features, std with 1/n and no epsilon."""
    mean = x.mean(dim=-1, keepdim=True)
    return (x - mean) / x.var(dim=-1, unbiased=False, keepdim=True).sqrt()


def _ffn(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ matrix("W1") + matrix("b1")[0]) @ matrix("W2") + matrix("b2")[0]


def _patches_of(img: torch.Tensor) -> torch.Tensor:
    """(6, 6) -> (9, 4): 2×2 blocks row by row, each read left to right, top to bottom."""
    return img.view(3, 2, 3, 2).permute(0, 2, 1, 3).reshape(9, 4)  # (grid row, y, grid col, x) -> (patch, y·x)


# ----------------------------------------------------------------------------- what is compared


@dataclass(frozen=True)
class Step:
    """One result the seed printed, where the report shows it, the model's value, and the seed's own formula."""

    entry: str  # rows of seed_004.csv
    what: str  # what the seed printed, as a page says it
    page: str  # record name of the snapshot page that shows it (with the {block} placeholder)
    ours: Callable[[Any], torch.Tensor]  # run -> the model's value, one row per printed row
    own: Callable[[], torch.Tensor]  # the seed's formula on the seed's own printed inputs, one row per printed row
    reads: tuple[str, ...]  # the entries that formula reads
    method: str = ""  # how the seed's formula differs from the model's, when it does


# Where the compared tensors are recorded (generator/places.py): the model's declared points, at their places.
model = Place("", ToyVisionTransformer)
patch_embed = Place("patch_embed", PatchEmbedding)
block = Place("{block}", EncoderBlock)
block_attn = Place("{block}.attn", SelfAttention)
block_mlp = Place("{block}.mlp", MLP)


def _t(run: Any, ref: Ref) -> torch.Tensor:
    return run.t(ref)  # the run fills the placeholder of the traced layer


STEPS: tuple[Step, ...] = (
    Step("patches", "the nine 2×2 patches", patch_embed.PATCHES.template,
         # (N, Ch, P, P) -> (N, Ch·P·P) to match the printed rows
         lambda run: _t(run, patch_embed.PATCHES)[0].reshape(9, -1),
         lambda: _patches_of(matrix("image")), ("image",)),
    Step("flat", "the flattened patch vectors", patch_embed.FLAT.template,
         lambda run: _t(run, patch_embed.FLAT)[0], lambda: matrix("patches"), ("patches",)),
    Step("embed_worked", "patch A times E, worked out term by term", patch_embed.EMBED.template,
         lambda run: _t(run, patch_embed.EMBED)[0, :1], lambda: matrix("flat")[:1] @ matrix("E_matrix"),
         ("flat", "E_matrix")),
    Step("embed", "the projected embeddings, patch · E", patch_embed.EMBED.template,
         lambda run: _t(run, patch_embed.EMBED)[0], lambda: matrix("flat") @ matrix("E_matrix"),
         ("flat", "E_matrix")),
    Step("tokens", "the sequence with [CLS] in front", model.TOKENS.template,
         lambda run: _t(run, model.TOKENS)[0], lambda: torch.cat([matrix("cls_token"), matrix("embed")]),
         ("cls_token", "embed")),
    Step("x0", "x⁰ = embedding + position", model.TOKENS_POS.template,
         lambda run: _t(run, model.TOKENS_POS)[0], lambda: matrix("tokens") + matrix("pos"), ("tokens", "pos")),
    Step("q", "the query of patch E, Q₅", block_attn.Q.template,
         lambda run: _t(run, block_attn.Q)[0, 0, QUERY:QUERY + 1], lambda: matrix("x0")[QUERY:QUERY + 1], ("x0",)),
    Step("k", "the key vectors Kⱼ", block_attn.K.template,
         lambda run: _t(run, block_attn.K)[0, 0], lambda: matrix("x0"), ("x0",)),
    Step("v", "the value vectors it writes out, V₀, V₁ and V₉", block_attn.V.template,
         lambda run: _t(run, block_attn.V)[0, 0, [0, 1, 9]], lambda: matrix("x0")[[0, 1, 9]], ("x0",)),
    Step("dots", "E's raw attention scores Q₅ · Kⱼ", block_attn.DOTS.template,
         # (N1,) -> (N1, 1): one printed number per row
         lambda run: _t(run, block_attn.DOTS)[0, 0, QUERY].unsqueeze(1),
         lambda: (matrix("k") @ matrix("q")[0]).unsqueeze(1), ("q", "k")),
    Step("probs", "E's attention weights", block_attn.PROBS.template,
         lambda run: _t(run, block_attn.PROBS)[0, 0, QUERY].unsqueeze(1),
         lambda: _softmax(matrix("dots")[:, 0]).unsqueeze(1),
         ("dots",), "the seed takes the softmax of the raw dot products; the model divides them by √hs first, as the "
                    "paper does"),
    Step("context", "E's new representation, the weighted sum of the values", block_attn.CONTEXT.template,
         lambda run: _t(run, block_attn.CONTEXT)[0, 0, QUERY:QUERY + 1],
         lambda: (matrix("probs")[:, 0] @ matrix("x0")).unsqueeze(0),
         ("probs", "x0")),
    Step("attn_out", "every token after attention", block_attn.OUT.template,
         lambda run: _t(run, block_attn.OUT)[0], lambda: _softmax(matrix("x0") @ matrix("x0").T) @ matrix("x0"),
         ("x0",),
         "the seed's softmax skips the division by √hs"),
    Step("xW1", "E's x·W₁ (before the bias)", block_mlp.FC1.template,
         lambda run: _t(run, block_mlp.FC1)[0, QUERY:QUERY + 1] - run.parameter("{block}.mlp.fc1.bias"),
         lambda: matrix("context") @ matrix("W1"), ("context", "W1"),
         "the seed feeds E's attention output straight into the MLP; the model feeds it LN(x⁰ + attention), "
         "the Add & Norm the seed draws but skips"),
    Step("fc1", "E's x·W₁ + b₁", block_mlp.FC1.template,
         lambda run: _t(run, block_mlp.FC1)[0, QUERY:QUERY + 1], lambda: matrix("xW1") + matrix("b1"),
         ("xW1", "b1")),
    Step("hidden", "E's hidden layer after ReLU", block_mlp.HIDDEN.template,
         lambda run: _t(run, block_mlp.HIDDEN)[0, QUERY:QUERY + 1], lambda: torch.relu(matrix("fc1")), ("fc1",)),
    Step("mlp_out", "E's MLP output", block_mlp.OUT.template,
         lambda run: _t(run, block_mlp.OUT)[0, QUERY:QUERY + 1],
         lambda: matrix("hidden") @ matrix("W2") + matrix("b2"),
         ("hidden", "W2", "b2")),
    Step("residual", "E's residual sum", block.RESIDUAL_2.template,
         lambda run: _t(run, block.RESIDUAL_2)[0, QUERY:QUERY + 1],
         lambda: matrix("x0")[QUERY:QUERY + 1] + matrix("mlp_out"),
         ("x0", "mlp_out"), "the seed adds x⁰ back; the model adds the MLP's own input, the output of the first Add & "
                            "Norm"),
    Step("ln_mean", "the mean of E's residual sum", block.LN_2.template,
         lambda run: _t(run, block.RESIDUAL_2)[0, QUERY:QUERY + 1].mean(dim=-1, keepdim=True),
         lambda: matrix("residual").mean(dim=-1, keepdim=True), ("residual",)),
    Step("ln_var", "its variance", block.LN_2.template,
         lambda run: _t(run, block.RESIDUAL_2)[0, QUERY:QUERY + 1].var(dim=-1, unbiased=False, keepdim=True),
         lambda: ((matrix("residual") - matrix("ln_mean")) ** 2).mean(dim=-1, keepdim=True), ("residual", "ln_mean")),
    Step("ln_std", "its standard deviation", block.LN_2.template,
         lambda run: _t(run, block.RESIDUAL_2)[0, QUERY:QUERY + 1].var(dim=-1, unbiased=False, keepdim=True).sqrt(),
         lambda: matrix("ln_var").sqrt(), ("ln_var",)),
    Step("ln_out", "E normalised, (x − mean) / std", block.LN_2.template,
         lambda run: _t(run, block.LN_2)[0, QUERY:QUERY + 1],
         lambda: (matrix("residual") - matrix("ln_mean")) / matrix("ln_std"),
         ("residual", "ln_mean", "ln_std")),
    Step("x1", "every token after the layer, x¹", block.OUTPUT.template,
         lambda run: _t(run, block.OUTPUT)[0], lambda: _normalise(matrix("x0") + _ffn(matrix("attn_out"))),
         ("x0", "attn_out"),
         "the seed skips the first Add & Norm, as for E"),
    Step("logits", "the class logits", model.LOGITS.template,
         lambda run: _t(run, model.LOGITS), lambda: matrix("cls_layer12") @ matrix("W_cls") + matrix("b_cls"),
         ("cls_layer12",),
         "the seed's head reads a [CLS] it imagines after 12 layers; the model's head reads its [CLS] after its one "
         "layer"),
    Step("exp_logits", "e to the logits", model.PROBS.template,
         lambda run: _t(run, model.LOGITS).exp(), lambda: matrix("logits").exp(), ("logits",)),
    Step("exp_sum", "their sum", model.PROBS.template,
         lambda run: _t(run, model.LOGITS).exp().sum(dim=-1, keepdim=True),
         lambda: matrix("exp_logits").sum(dim=-1, keepdim=True),
         ("exp_logits",)),
    Step("probs_cls", "the class probabilities", model.PROBS.template,
         lambda run: _t(run, model.PROBS), lambda: matrix("exp_logits") / matrix("exp_sum"), ("exp_logits", "exp_sum")),
)

# The seed's inputs: loaded into the model (or, for its imagined layer-12 [CLS], only read by its own arithmetic).
INPUTS = ("image", "E_matrix", "cls_token", "pos", "W1", "b1", "W2", "b2", "W_cls", "b_cls", "cls_layer12")


# ----------------------------------------------------------------------------- the comparison


def rounded(value: float, decimals: int) -> str:
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # -0.00 reads 0.00


@dataclass(frozen=True)
class Row:
    """One printed row beside the model's value and the seed's own arithmetic."""

    printed: Printed
    ours: tuple[float, ...]
    own: tuple[float, ...]
    agree: tuple[bool, ...]  # per value: the model's value rounds to the printed one
    consistent: bool  # the seed's own inputs give what it printed (to its rounding)
    verdict: str  # agrees, slip, carried, method
    differing_inputs: tuple[str, ...] = ()  # for "carried": the entries the seed reads that differ from the model

    @property
    def agrees(self) -> bool:
        return all(self.agree)

    @property
    def ours_rounded(self) -> tuple[str, ...]:
        return tuple(rounded(v, self.printed.decimals) for v in self.ours)

    @property
    def own_rounded(self) -> tuple[str, ...]:
        return tuple(rounded(v, self.printed.decimals) for v in self.own)


@dataclass(frozen=True)
class Comparison:
    step: Step
    rows: tuple[Row, ...]

    @property
    def agreeing(self) -> int:
        return sum(r.agrees for r in self.rows)

    @property
    def differing(self) -> int:
        return len(self.rows) - self.agreeing

    def count(self, verdict: str) -> int:
        return sum(r.verdict == verdict for r in self.rows)


def _within(a: torch.Tensor, b: torch.Tensor, decimals: int) -> torch.Tensor:
    return (a - b).abs() <= 0.5 * 10.0**-decimals + SLACK


def compare(run: Any) -> dict[str, Comparison]:
    """Every printed result beside the run's value, entry by entry in the seed's order."""
    done: dict[str, Comparison] = {}
    for step in STEPS:
        rows_printed = printed()[step.entry]
        ours, own = step.ours(run).double().cpu(), step.own().double()
        if ours.shape != (len(rows_printed), len(rows_printed[0].text)) or own.shape != ours.shape:
            raise ValueError(f"seed entry {step.entry}: {len(rows_printed)} printed rows of "
                             f"{len(rows_printed[0].text)}, "
                             f"but the run gives {tuple(ours.shape)} and the seed's own arithmetic {tuple(own.shape)}")
        differing_inputs = tuple(entry for entry in step.reads if entry in done and done[entry].differing)
        rows = []
        for p, mine, theirs in zip(rows_printed, ours, own):
            agree = _within(mine, p.values, p.decimals)
            consistent = bool(_within(theirs, p.values, p.decimals).all())
            if bool(agree.all()):
                verdict = "agrees"
            elif not consistent:
                verdict = "slip"
            elif differing_inputs or not step.method:
                verdict = "carried"
            else:
                verdict = "method"
            rows.append(Row(p, tuple(mine.tolist()), tuple(theirs.tolist()), tuple(agree.tolist()), consistent, verdict,
                            differing_inputs))
        done[step.entry] = Comparison(step, tuple(rows))
    return done


def table(comparisons: dict[str, Comparison]) -> dict[str, dict[str, Any]]:
    """The comparison as plain data (for figures and their cache keys): entry -> what, and per printed row its item,
    line,
    printed text, the run's value and the verdict."""
    return {entry: {"what": c.step.what,
                    "rows": [{"item": r.printed.item, "line": r.printed.line, "printed": list(r.printed.text),
                                                    "ours": list(r.ours), "verdict": r.verdict} for r in c.rows]}
            for entry, c in comparisons.items()}


# ----------------------------------------------------------------------------- the seed's inputs, as this run holds
# them


@dataclass(frozen=True)
class Given:
    """One of the seed's inputs (image, weights) beside what this run holds: the same, unless other pixels or weights
    were chosen."""

    entry: str
    what: str
    page: str  # record name of the snapshot page that shows it
    rows: tuple[Printed, ...]
    held: tuple[tuple[float, ...], ...]  # this run's values, one row per printed row

    @property
    def same(self) -> bool:
        return all(_within(torch.tensor(h, dtype=torch.float64), p.values, p.decimals).all() for p,
                   h in zip(self.rows, self.held))


# entry -> (what, the page that shows it, run -> this run's values as printed rows)
GIVEN: dict[str, tuple[str, str, Callable[[Any], torch.Tensor]]] = {
    "image": ("the image", "image", lambda run: run.t("image")[0, 0]),
    "E_matrix": ("the projection matrix E", "patch_embed.embed",
                 lambda run: run.parameter("patch_embed.proj.weight").T),
    "cls_token": ("the [CLS] token", "cls_token", lambda run: run.parameter("class_token")[0]),
    "pos": ("the positional table", "tokens_pos", lambda run: run.parameter("pos_embedding")[0]),
    "W1": ("W₁", "{block}.mlp.fc1", lambda run: run.parameter("{block}.mlp.fc1.weight").T),
    "b1": ("b₁", "{block}.mlp.fc1", lambda run: run.parameter("{block}.mlp.fc1.bias").unsqueeze(0)),
    "W2": ("W₂", "{block}.mlp.out", lambda run: run.parameter("{block}.mlp.fc2.weight").T),
    "b2": ("b₂", "{block}.mlp.out", lambda run: run.parameter("{block}.mlp.fc2.bias").unsqueeze(0)),
    "W_cls": ("W_cls", "logits", lambda run: run.parameter("head.weight").T),
    "b_cls": ("b_cls", "logits", lambda run: run.parameter("head.bias").unsqueeze(0)),
}


def given(run: Any) -> dict[str, Given]:
    """Each of the seed's printed inputs beside this run's (the model's parameters, the recorded image)."""
    return {entry: Given(entry, what, page, printed()[entry], tuple(tuple(row) for row in held(run).double().tolist()))
            for entry, (what, page, held) in GIVEN.items()}
