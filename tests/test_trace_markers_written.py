"""Markers as people write them: after a docstring or right under a `def` line, on a `def` line (the arguments at
entry), on a `for` line (the loop variable each pass), a slice after the marker, a word after it that is a title; a line
shared by several snapshots told apart by the module that runs it; and a marker never reached says why."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.errors import UserError
from transformer_trace.render import escape_text
from transformer_trace.reports import REPORTS
from transformer_trace.trace import numberings
from transformer_trace.trace.reading.capture import run_script
from transformer_trace.trace.reading.user_files import user_files
from transformer_trace.trace.markers import find_markers, scan
from transformer_trace.trace.reading.shared_lines import CROSS, DECODER_SELF, ENCODER_SELF, hit_use


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def hits(script: Path) -> dict[str, list]:
    """Each marker's text -> its hits' values (name, values as lists)."""
    capture = run_script(script, [], scan(user_files(script), numberings(REPORTS)), None)
    assert capture.finished, capture.error
    return {marker.text: [[(v.name, v.tensor.tolist() if v.tensor is not None else v.note) for v in hit.values]
                          for hit in found] for marker, found in capture.hits.items()}


def test_a_marker_after_a_docstring_or_right_under_a_def_line_marks_the_first_statement_of_the_body(tmp_path):
    script = write(tmp_path, "documented.py", """\
        def first(x):
            return [x]
        def second(x):
            \"\"\"Scale.

            Twice.\"\"\"
            # trace: after_docstring
            doubled = [x, x]
            return doubled
        def third(x):
            # trace: under_def
            tripled = [x, x, x]
            return tripled
        def fourth(x):
            \"\"\"Negate.\"\"\"  # trace: on_docstring
            negated = [-x]
            return negated
        first(0), second(1), third(2), fourth(3)
    """)
    assert hits(script) == {"# trace: after_docstring": [[("doubled", [1, 1])]],
                            "# trace: under_def": [[("tripled", [2, 2, 2])]],
                            "# trace: on_docstring": [[("negated", [-3])]]}


def test_a_numbered_marker_after_a_docstring_marks_the_assignment_after_it(tmp_path):
    script = write(tmp_path, "scores.py", """\
        def attention(q, k):
            \"\"\"Scores of every query against every key.\"\"\"
            # Snapshot #10
            scores = q @ k
            return scores
    """)
    [marker] = find_markers(script, numberings(REPORTS))
    assert (marker.number, marker.names, marker.first) == (10, ("scores",), 4)


def test_a_marker_on_a_def_line_reads_the_arguments_as_the_function_is_entered(tmp_path):
    script = write(tmp_path, "entry.py", """\
        import functools
        @functools.lru_cache(maxsize=None)
        def scale(ids, factor):  # trace: entry
            ids = tuple(i * factor for i in ids)
            return ids
        class Block:
            def forward(self, x):  # trace: block
                return x
        scale((1, 2), 3)
        Block().forward([4, 5])
    """)
    assert hits(script) == {"# trace: entry": [[("ids", [1, 2]), ("factor", 3)]], "# trace: block": [[("x", [4, 5])]]}


def test_a_def_line_marker_on_a_method_skips_its_first_parameter_whatever_it_is_named(tmp_path):
    script = write(tmp_path, "renamed.py", """\
        class Block:
            def forward(s, x):  # trace: renamed
                return x
            @classmethod
            def build(klass, n):  # trace: built
                return n
            @staticmethod
            def helper(a, b):  # trace: plain
                return a
        Block().forward([4, 5])
        Block.build(3)
        Block.helper(1, 2)
    """)
    assert hits(script) == {"# trace: renamed": [[("x", [4, 5])]], "# trace: built": [[("n", 3)]],
                            "# trace: plain": [[("a", 1), ("b", 2)]]}


def test_a_marker_on_a_for_line_reads_the_loop_variable_each_pass_and_not_once_more_as_the_loop_ends(tmp_path):
    script = write(tmp_path, "loop.py", """\
        for step in [[1], [2], [3]]:  # trace: step
            if step == [2]:
                continue
            total = step
        after = 0
    """)
    assert hits(script) == {"# trace: step": [[("step", [1])], [("step", [2])], [("step", [3])]]}


def test_a_slice_after_the_marker_captures_that_slice_under_its_variables_name(tmp_path):
    script = write(tmp_path, "sliced.py", """\
        import torch
        bias = torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8)
        T = 3
        att = bias.sum()  # trace: mask bias[:, :, :T, :T]
    """)
    [[(name, values)]] = hits(script)["# trace: mask bias[:, :, :T, :T]"]
    assert name == "bias" and values == [[[[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]]]


def test_the_gpt_marker_with_a_slice_after_it_names_the_slice(tmp_path):
    script = write(tmp_path, "gpt.py", "att = q @ k  # BREAKPOINT G12 bias[:, :, :T, :T]\n")
    [marker] = find_markers(script, numberings(REPORTS))
    assert marker.number == 12 and marker.names == ("bias[:, :, :T, :T]",)


@pytest.mark.parametrize("written", ["x[__import__('os').system('true')]", "x[lambda: 1]"])
def test_a_slice_that_would_run_code_is_refused_in_one_line(tmp_path, written):
    script = write(tmp_path, "unsafe.py", f"y = 1  # trace: p {written}\n")
    with pytest.raises(UserError, match="a slice may use names, numbers"):
        find_markers(script, numberings(REPORTS))


@pytest.mark.parametrize("line, names", [
    ("logits, _ = model(x)  # BREAKPOINT S25", ("logits",)),
    ("_, weights = attn(x)  # trace: w", ("weights",)),
    ("_ = model(x)  # BREAKPOINT S25", ("_",)),  # the only name: read, as written
])
def test_a_throwaway_underscore_beside_another_name_is_not_read(tmp_path, line, names):
    [marker] = find_markers(write(tmp_path, "driver.py", line + "\n"), numberings(REPORTS))
    assert marker.names == names


def test_a_word_after_the_marker_that_is_no_variable_is_a_title_and_the_line_is_captured(tmp_path):
    script = write(tmp_path, "titled.py", "x = [1, 2]  # trace: p embeddings\n")
    assert hits(script) == {"# trace: p embeddings": [[("x", [1, 2])]]}


def test_a_marker_never_reached_says_why_on_the_overview(tmp_path):
    (tmp_path / "helper.py").write_text("z = [3]  # trace: helper_z\n", encoding="utf-8")
    script = write(tmp_path, "partly.py", """\
        if False:
            import helper
        def never_called():
            y = [2]  # trace: y
        x = [1]  # trace: x
        if x == [0]:
            w = [0]  # trace: w
    """)
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"]) == 0
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    warnings = data["outcome"]["warnings"]
    assert any("'# trace: y' was never reached: never_called() was never called" in w for w in warnings)
    assert any("'# trace: w' was never reached: the code around line 7 ran, but not that line" in w for w in warnings)
    assert any("'# trace: helper_z' was never reached: helper.py was never imported" in w for w in warnings)
    overview = (tmp_path / "out" / "t" / "index.md").read_text(encoding="utf-8")
    assert escape_text("never_called() was never called") in overview


# ----------------------------------------------------------------------------- one attention function, three uses

CORPUS = Path(__file__).resolve().parent / "trace_corpus"


def test_one_attention_function_with_one_call_site_gives_each_use_its_snapshot_by_the_module_running_it(tmp_path):
    """SamLynnEvans' Transformer (tests/trace_corpus): `attention()` is called from one line of MultiHeadAttention's
    forward for the encoder's `attn`, the decoder's `attn_1` and its `attn_2`; marked "#10 or #24 or #33", its hits are
    told apart by the module running them (its key input, and whether it sits in the encoder or the decoder)."""
    entry = tmp_path / "entry"
    shutil.copytree(CORPUS / "SamLynnEvans_Transformer", entry)
    sublayers = entry / "Sublayers.py"
    source = sublayers.read_text(encoding="utf-8")
    assert source.count("# Snapshot #10\n") == 1 and source.count("# Snapshot #11\n") == 1
    sublayers.write_text(source.replace("# Snapshot #10\n", "# Snapshot #10 or #24 or #33\n")
                         .replace("# Snapshot #11\n", "# Snapshot #11 or #26 or #34\n"), encoding="utf-8")
    for hit in ("1", "2"):
        out = tmp_path / f"out{hit}"
        assert main(["trace", str(entry / "trace_driver.py"), "--out", str(out), "--name", "t", "-q",
                     "--hit", hit]) == 0
        data = json.loads((out / "t" / "snapshots.json").read_text(encoding="utf-8"))
        by_label = {s["label"]: s for s in data["snapshots"]}
        # (B, h, queries, keys): the source has 7 positions, the target 6
        for scores, probabilities, shape in [("#10", "#11", [2, 4, 7, 7]), ("#24", "#26", [2, 4, 6, 6]),
                                             ("#33", "#34", [2, 4, 6, 7])]:
            assert by_label[scores]["shape"] == by_label[probabilities]["shape"] == shape
        assert all(by_label[label]["check"]["passed"] for label in ("#10", "#24", "#33", "#11", "#26", "#34"))
        assert data["outcome"]["first_failure"] is None
    [told] = [t for t in data["outcome"]["recognised"]["told_apart"] if "#10 or #24 or #33" in t]
    assert "#10 takes the encoder self-attention (encoder.layers.0.attn (MultiHeadAttention), encoder.layers.1.attn " \
           "(MultiHeadAttention): its key input is its query input, and it is in the encoder)" in told
    assert "#24 takes the decoder self-attention (decoder.layers.0.attn_1 (MultiHeadAttention)" in told
    assert "#33 takes the cross-attention (decoder.layers.0.attn_2 (MultiHeadAttention), decoder.layers.1.attn_2 " \
           "(MultiHeadAttention): its key input differs from its query input)" in told
    overview = (out / "t" / "index.md").read_text(encoding="utf-8")
    assert escape_text(told) in overview


def test_a_shared_line_whose_module_does_not_tell_its_use_says_so_and_assigns_nothing(tmp_path):
    script = write(tmp_path, "untold.py", """\
        import torch
        class Attention(torch.nn.Module):
            def forward(self, x):
                scores = x @ x.transpose(-2, -1)  # Snapshot #10 or #24
                return scores
        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = torch.nn.ModuleList([Attention(), Attention()])
            def forward(self, x):
                for block in self.blocks:
                    x = block(x) @ x
                return x
        Model()(torch.ones(1, 3, 4))
    """)
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"]) == 0
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    assert not any(s["captured"] for s in data["snapshots"])
    [warning] = data["outcome"]["warnings"]
    assert "does not tell which use each hit is (blocks.0 (Attention): it was called with one input, but the modules " \
           "around it name neither an encoder nor a decoder)" in warning


@pytest.mark.parametrize("path, self_uses, use", [
    # the annotated Transformer: self_attn in both stacks, src_attn the decoder's cross-attention
    ([["", "EncoderDecoder", None], ["encoder", "Encoder", None], ["layers", "ModuleList", None],
      ["0", "EncoderLayer", None], ["self_attn", "MultiHeadedAttention", "same"]], 2, ENCODER_SELF),
    ([["", "EncoderDecoder", None], ["decoder", "Decoder", None], ["layers", "ModuleList", None],
      ["0", "DecoderLayer", None], ["self_attn", "MultiHeadedAttention", "same"]], 2, DECODER_SELF),
    ([["", "EncoderDecoder", None], ["decoder", "Decoder", None], ["layers", "ModuleList", None],
      ["0", "DecoderLayer", None], ["src_attn", "MultiHeadedAttention", "differ"]], 2, CROSS),
    # jadore801120: the attention function in a ScaledDotProductAttention inside slf_attn / enc_attn; forward called
    # directly (arguments unknown): the names decide, and enc_attn inside the decoder is its cross-attention
    ([["", "Transformer", None], ["decoder", "Decoder", None], ["layer_stack", "ModuleList", None],
      ["0", "DecoderLayer", None], ["enc_attn", "MultiHeadAttention", None],
      ["attention", "ScaledDotProductAttention", None]], 2, CROSS),
    ([["", "Transformer", None], ["encoder", "Encoder", None], ["layer_stack", "ModuleList", None],
      ["0", "EncoderLayer", None], ["slf_attn", "MultiHeadAttention", None]], 2, ENCODER_SELF),
    # torch.nn.Transformer: the decoder layer's cross-attention is multihead_attn, told by its inputs
    ([["", "Transformer", None], ["decoder", "TransformerDecoder", None], ["layers", "ModuleList", None],
      ["0", "TransformerDecoderLayer", None], ["multihead_attn", "MultiheadAttention", "differ"]], 2, CROSS),
    # a decoder layer driven on its own, with one self-attention among the line's snapshots
    ([["", "Block", None], ["mha", "MHA", "one"]], 1, "self"),
    # a name that says cross-attention, called with its queries as keys outside the encoder: the cross-attention, fed
    # the wrong input (tests/test_trace_cross_attention_fed.py)
    ([["", "DecoderLayer", None], ["cross_attn", "MHA", "same"]], 2, CROSS),
    # not told: a name and the inputs at odds in the encoder; a self-attention in neither stack when two are possible
    ([["", "EncoderLayer", None], ["src_attn", "MHA", "same"]], 2, None),
    ([["", "Model", None], ["blocks", "ModuleList", None], ["0", "Attention", "one"]], 2, None),
    (None, 2, None),
])
def test_a_shared_lines_hit_is_told_by_its_attention_modules_inputs_name_and_place(path, self_uses, use):
    assert hit_use(path, self_uses).use == use


def test_a_gpt_with_a_sliced_mask_buffer_and_a_title_word_after_its_markers_is_captured_and_passes(tmp_path):
    """minGPT (tests/trace_corpus) with the context-size `bias` buffer marked as the slice the line uses and a title
    word after the scores' marker: the slice is the mask the page shows, the title is no error."""
    entry = tmp_path / "entry"
    shutil.copytree(CORPUS / "karpathy_minGPT", entry)
    model = entry / "mingpt" / "model.py"
    source = model.read_text(encoding="utf-8")
    assert "# BREAKPOINT G12 self.bias\n" in source and "# BREAKPOINT G11\n" in source
    model.write_text(source.replace("# BREAKPOINT G12 self.bias\n", "# BREAKPOINT G12 self.bias[:, :, :T, :T]\n")
                     .replace("# BREAKPOINT G11\n", "# BREAKPOINT G11 Scores\n"), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["trace", str(entry / "trace_driver.py"), "--out", str(out), "--name", "t", "-q"]) == 0
    data = json.loads((out / "t" / "snapshots.json").read_text(encoding="utf-8"))
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert by_label["G12"]["shape"] == [1, 1, 6, 6] and by_label["G12"]["check"]["passed"] is True
    assert by_label["G11"]["variable"] == "att" and by_label["G11"]["check"]["passed"] is True
    [mask] = [v for v in data["outcome"]["recognised"]["variants"] if v["what"] == "Mask (G12)"]
    assert mask["variant"].endswith("; the slice self.bias[:, :, :T, :T]")
    assert data["outcome"]["first_failure"] is None


def test_a_marker_on_or_under_a_line_of_several_statements_marks_the_last_one(tmp_path):
    """`e = x.exp(); probs = e / e.sum()`: the statement that runs last is the one a breakpoint after the line sees
    completed, and the one that assigns the step's value."""
    script = write(tmp_path, "semicolons.py", """\
        import torch
        x = torch.tensor([0.0, 1.0])
        e = x.exp(); inline = e / e.sum()  # trace: inline
        e = x.exp(); below = e / e.sum()
        # trace: below
    """)
    found = hits(script)
    assert [name for name, _ in found["# trace: inline"][0]] == ["inline"]
    assert [name for name, _ in found["# trace: below"][0]] == ["below"]



@pytest.mark.parametrize("line, names", [
    ("f = lambda t: t * 2  # trace: f  # noqa: E731", ("f",)),
    ("h = [1, 2]  # trace: first h[0]  # type: ignore[assignment]", ("h[0]",)),
    ("g = 3  # trace: g#no space before the user's comment", ("g",)),
])
def test_a_users_comment_after_a_trace_point_is_left_to_the_user(tmp_path, line, names):
    script = write(tmp_path, "linted.py", f"{line}\n")
    [marker] = find_markers(script, numberings(REPORTS))
    assert marker.names == names and "#" not in marker.text[1:] and marker.text.startswith("# trace: ")


def test_a_marker_on_a_case_line_reads_the_names_its_pattern_binds_each_time_the_case_is_taken(tmp_path):
    script = write(tmp_path, "matched.py", """\
        for command in [(1, 3), (2, 20, 30), (1, 5)]:
            match command:
                case (1, k):  # trace: scale
                    y = k * 2
                case [2, *rest] if (n := len(rest)) > 1:  # trace: more
                    z = rest
    """)
    assert hits(script) == {"# trace: scale": [[("k", 3)], [("k", 5)]],
                            "# trace: more": [[("rest", [20, 30]), ("n", 2)]]}
