"""Write docs/notebooks/record-a-forward-pass.ipynb and execute it, so it is committed with outputs.

Run: .venv/bin/python scripts/make_notebook.py
"""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell

cells = [
    md("# Record a forward pass yourself\n\n"
       "The report pages are generated from exactly this API. Here we build the seed report's encoder–decoder, "
       "record one forward pass, and look at a few snapshots interactively — the way a debugger would, but in code."),
    code("import torch\n"
         "from transformer_trace.models.encoder_decoder import EncoderDecoderConfig, EncoderDecoderTransformer, "
         "build_vocab, encode\nfrom transformer_trace.models.recording import recording\n\n"
         "src, tgt = 'hello from cairo egypt team project', 'we are debugging transformer today'\n"
         "src_vocab, tgt_vocab = build_vocab(src), build_vocab(tgt)\n"
         "torch.manual_seed(7)  # the seed report's seed: same weights, same numbers\n"
         "model = EncoderDecoderTransformer(EncoderDecoderConfig(len(src_vocab), len(tgt_vocab))).eval()\n"
         "src_ids = torch.tensor([encode(src, src_vocab)])  # (B, S) = (1, 6)\n"
         "tgt_ids = torch.tensor([encode(tgt, tgt_vocab)])  # (B, T) = (1, 5)\n"
         "src_ids, tgt_ids"),
    md("`recording()` collects every tensor the model wraps in `record(...)`, by a stable name, with the file and "
       "line that computed it. Outside the block the model is a plain `nn.Module`."),
    code("with torch.no_grad(), recording() as rec:\n"
         "    logits = model(src_ids, tgt_ids)\n"
         "print(len(rec), 'tensors recorded, e.g.:')\n"
         "for name in list(rec)[:8]:\n"
         "    entry = rec[name]\n"
         "    print(f'{name:40s} {tuple(entry.tensor.shape)!s:18s} {entry.file.name}:{entry.line}')"),
    md("## Snapshot #7: the queries of encoder layer 1\n\nThe first five features at position 0 are the values the "
       "seed report printed."),
    code("q = rec.tensor('encoder.layers.0.self_attn.q')  # (B, S, C)\n"
         "q.shape, q[0, 0, :5]"),
    md("## Snapshot #11: attention weights\n\nEvery row is a probability distribution over the source words."),
    code("probs = rec.tensor('encoder.layers.0.self_attn.probs')  # (B, h, S, S)\n"
         "print(probs.shape, 'row sums:', probs.sum(-1)[0, 0])\n"
         "probs[0, 0]"),
    code("import base64, io\n"
         "import matplotlib.pyplot as plt\n"
         "from IPython.display import HTML\n"
         "words = src.split()\n"
         "fig, axes = plt.subplots(1, 4, figsize=(13, 3.4))\n"
         "for head, ax in enumerate(axes):\n"
         "    ax.imshow(probs[0, head], vmin=0)\n"
         "    ax.set_title(f'head {head + 1}')\n"
         "    ax.set_xticks(range(6), words, rotation=60)\n"
         "    ax.set_yticks(range(6), words)\n"
         "fig.tight_layout()\n"
         "# Shown as an <img> with alternative text, so that the figure has a description on the site too\n"
         "png = io.BytesIO()\n"
         "fig.savefig(png, format='png')\n"
         "plt.close(fig)\n"
         "HTML('<img alt=\"Four heatmaps, one per attention head of encoder layer 1: how strongly each source word '\n"
         "     'attends to every other word\" src=\"data:image/png;base64,' + "
         "base64.b64encode(png.getvalue()).decode() + '\">')"),
    md("## Snapshot #25: the causal mask, and what it does to the decoder's attention"),
    code("mask = rec.tensor('tgt_mask')[0, 0]  # (T, T)\n"
         "masked = rec.tensor('decoder.layers.0.self_attn.probs')[0, 0]  # head 1\n"
         "print(mask)\n"
         "print(masked)"),
    md("## Snapshot #42: logits\n\nOne score per target-vocabulary word at each target position."),
    code("inverse = {i: w for w, i in tgt_vocab.items()}\n"
         "[inverse[int(i)] for i in logits[0].argmax(-1)]"),
]
notebook = nbformat.v4.new_notebook(cells=cells,
                                    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                             "language": "python"}})
NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
target = ROOT / "docs" / "notebooks" / "record-a-forward-pass.ipynb"
nbformat.write(notebook, target)
print("wrote", target)
