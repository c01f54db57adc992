"""Two of the three base scripts are the examples shrunk (examples/vit_trace.py, examples/encoder_decoder_trace.py):
sizes chosen so that no two named dimensions are equal, a batch of two, and a docstring saying so. Made here from the
example each time, never kept as a copy: an example edited is a base edited, and a shrink that no longer applies fails
at once (each of its replacements must match once, as a rewrite's). The GPT base is nanoGPT's modules, no example's:
it stays a file, bases/gpt.py."""

from __future__ import annotations

from pathlib import Path

from tests.variants.rewrites import Rewrite

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

_VIT_DOC = '''\
"""A tiny Vision Transformer in plain functions, with every snapshot of the seed report marked (S01–S26).

Trace it:  python -m transformer_trace trace examples/vit_trace.py
A `# BREAKPOINT Sxx` comment on its own line marks the statement just above it, as a debugger breakpoint there
stops once that statement has run. Sizes are ViT-Tiny's for 32×32 images (4×4 patches, width 192, 3 heads, 6 blocks).
"""'''
_ENCODER_DECODER_DOC = '''\
"""A tiny encoder–decoder Transformer in plain functions, with every snapshot of the seed report marked.

Trace it:  python -m transformer_trace trace examples/encoder_decoder_trace.py
Each `# Snapshot #N` comment marks the value a debugger would show after that line has run.
The sizes are the seed report's (d_model 128, 4 heads, d_ff 256, 2 + 2 layers): it runs in milliseconds.
"""'''

VIT = Rewrite("vit base", "the example's ViT at sizes no two of which are equal, a batch of two images", (
    (_VIT_DOC, '"""Base ViT (from examples/vit_trace.py, shrunk): a pre-norm Vision Transformer in plain functions, '
               'every snapshot\nS01–S26 marked. Sizes chosen so that no two named dimensions are equal (B 2, N 9, N1 '
               '10, C 24, h 3, hs 8, MLP 40)."""'),
    ("IMAGE_SIZE, PATCH, WIDTH, HEADS, MLP, BLOCKS, CLASSES = 32, 4, 192, 3, 768, 6, 10  # ViT-Tiny on CIFAR-10 sizes",
     "IMAGE_SIZE, PATCH, WIDTH, HEADS, MLP, BLOCKS, CLASSES = 12, 4, 24, 3, 40, 3, 5"),
    ("(2, 0, 3, 1, 4)  # (B, N, 3C) -> (3, B, h, N, hs)", "(2, 0, 3, 1, 4)  # (3, B, h, N, hs)"),
    ('p["proj"])  # (B, h, N, hs) -> (B, N, C)', 'p["proj"])  # (B, N, C)'),
    ("img_tensor = torch.randn(1, 3,", "img_tensor = torch.randn(2, 3,"),
    ('print("predicted class:", int(probs.argmax()))', 'print("predicted classes:", probs.argmax(-1).tolist())'),
))

ENCODER_DECODER = Rewrite("encoder_decoder base", "the example's encoder–decoder at sizes no two of which are equal, "
                          "a batch of two sentence pairs", (
    (_ENCODER_DECODER_DOC,
     '"""Base encoder–decoder (from examples/encoder_decoder_trace.py, shrunk): a post-norm Transformer in plain '
     'functions,\nbatch-first, the paper\'s interleaved sinusoid positions, an additive −inf causal mask, all 43 '
     'snapshots marked. A\nbatch of two sentence pairs; sizes chosen so that no two named dimensions are equal (B 2, '
     'S 7, T 6, C 24, h 3, hs 8,\nF 40)."""'),
    ("import math\nimport sys\n", "import math\n"),
    ('SRC_SENTENCE = "the cat sat on the warm mat"\nTGT_SENTENCE = "le chat dort sur le tapis"\n'
     "D_MODEL, N_HEADS, D_FF, N_LAYERS = 128, 4, 256, 2  # the seed report's sizes",
     'SOURCES = ["the cat sat on the warm mat", "a dog lay by the cold door"]\n'
     'TARGETS = ["le chat dort sur le tapis", "un chien dort par la porte"]\n'
     "D_MODEL, N_HEADS, D_FF, N_LAYERS = 24, 3, 40, 2"),
    ("def build_vocab(sentence):\n    return {word: i for i, word in enumerate(sorted(set(sentence.split())))}",
     "def build_vocab(sentences):\n"
     "    return {word: i for i, word in enumerate(sorted({w for s in sentences for w in s.split()}))}"),
    ('"ln1_b": (D_MODEL,),\n              "W_1": (D_MODEL, D_FF), "b_1": (D_FF,), "W_2": (D_FF, D_MODEL), '
     '"b_2": (D_MODEL,), "ln2_g": (D_MODEL,), "ln2_b": (D_MODEL,)}',
     '"ln1_b": (D_MODEL,), "W_1": (D_MODEL, D_FF),\n              "b_1": (D_FF,), "W_2": (D_FF, D_MODEL), '
     '"b_2": (D_MODEL,), "ln2_g": (D_MODEL,), "ln2_b": (D_MODEL,)}'),
    ("def main(src_sentence, tgt_sentence):", "def main():"),
    ("build_vocab(src_sentence), build_vocab(tgt_sentence)", "build_vocab(SOURCES), build_vocab(TARGETS)"),
    ("src_ids = encode(src_sentence, src_vocab)", "src_ids = [encode(s, src_vocab) for s in SOURCES]"),
    ("tgt_ids = encode(tgt_sentence, tgt_vocab)", "tgt_ids = [encode(t, tgt_vocab) for t in TARGETS]"),
    ("src_emb[torch.tensor([src_ids])]", "src_emb[torch.tensor(src_ids)]"),
    ("S, T = len(src_ids), len(tgt_ids)", "S, T = len(src_ids[0]), len(tgt_ids[0])"),
    ("tgt_emb[torch.tensor([tgt_ids])]", "tgt_emb[torch.tensor(tgt_ids)]"),
    ("    args = sys.argv[1:]\n    logits = main(args[0] if args else SRC_SENTENCE, args[1] if len(args) > 1 else "
     'TGT_SENTENCE)\n    print("predicted target IDs:", logits.argmax(-1).tolist())',
     '    print("predicted target IDs:", main().argmax(-1).tolist())'),
))

FROM_EXAMPLES = {"vit": (EXAMPLES / "vit_trace.py", VIT),
                 "encoder_decoder": (EXAMPLES / "encoder_decoder_trace.py", ENCODER_DECODER)}


def example_base(base: str) -> str | None:
    """The base script ``base`` made from its example ("vit", "encoder_decoder"); None for a base of its own."""
    if base not in FROM_EXAMPLES:
        return None
    example, shrink = FROM_EXAMPLES[base]
    return shrink.apply(example.read_text(encoding="utf-8"))
