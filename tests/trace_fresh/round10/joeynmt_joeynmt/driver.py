"""Driver (ours, not upstream): JoeyNMT's Transformer (joeynmt/joeynmt 2.3.0, the minimalist neural machine translation
toolkit for teaching: joeynmt/model.py's `build_model`, `Embeddings` scaled by sqrt(C), a sinusoid `PositionalEncoding`
module, pre-norm `TransformerEncoderLayer`/`TransformerDecoderLayer`, one `MultiHeadedAttention` class called as
(k, v, q) for the encoder's, the decoder's masked and the cross-attention — the queries divided by sqrt(hs) before the
product, boolean masks applied with `masked_fill(~mask, -inf)`, an `nn.Softmax` module —, the feed-forward's LayerNorm
and residual inside `PositionwiseFeedForward`, final LayerNorms in the encoder and the decoder) at a tiny size (width
32, 4 heads of 8, 2 encoder and 2 decoder layers, feed-forward 64, vocabularies of 4 specials + 20 words), weights
drawn from a normal distribution (seed 0; LayerNorm gains 1 + N(0, 0.1²)), eval mode, a batch of two sentence pairs
(source 7 IDs, the second padded by 2; target input 6 IDs and the target masks made as joeynmt.batch.Batch makes them), one forward pass: `model(return_type="loss", ...)`, the
encode-decode pass JoeyNMT's validation runs.
Stubs (ours): importlib_metadata.py, sentencepiece.py, subword_nmt/ (not installed here; imported at the top of
joeynmt's helpers and tokenizers); torch.utils.tensorboard is put in sys.modules below (its import needs the tensorboard
package; joeynmt/helpers.py only names SummaryWriter in a type hint).
Trace: python -m transformer_trace trace driver.py"""
import sys
import types
from types import SimpleNamespace

import torch

tensorboard_stub = types.ModuleType("torch.utils.tensorboard")
tensorboard_stub.SummaryWriter = object
sys.modules["torch.utils.tensorboard"] = tensorboard_stub

from joeynmt.model import build_model  # noqa: E402
from joeynmt.vocabulary import Vocabulary  # noqa: E402

specials = SimpleNamespace(unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>", sep_token=None,
                           lang_tags=[], unk_id=0, pad_id=1, bos_id=2, eos_id=3, sep_id=None)
src_vocab = Vocabulary([f"src{i}" for i in range(20)], specials)
trg_vocab = Vocabulary([f"trg{i}" for i in range(20)], specials)
layers = {"type": "transformer", "num_layers": 2, "num_heads": 4, "hidden_size": 32, "ff_size": 64, "dropout": 0.1,
          "layer_norm": "pre", "embeddings": {"embedding_dim": 32, "scale": True, "dropout": 0.1}}
cfg = {"encoder": dict(layers), "decoder": dict(layers), "initializer": "xavier_uniform",
       "embed_initializer": "xavier_uniform", "bias_initializer": "zeros"}

torch.manual_seed(0)
model = build_model(cfg, src_vocab=src_vocab, trg_vocab=trg_vocab).eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        parameter.normal_(0.0, 0.1)
        if "layer_norm" in name and name.endswith("weight"):
            parameter.add_(1.0)
model.loss_function = ("crossentropy", 0.0)

src = torch.tensor([[7, 12, 5, 19, 9, 14, 3], [11, 6, 22, 8, 3, 1, 1]])  # Snapshot #1
trg = torch.tensor([[9, 16, 4, 21, 13, 3], [18, 10, 7, 23, 3, 1]])
trg_input = torch.tensor([[2, 9, 16, 4, 21, 13], [2, 18, 10, 7, 23, 1]])  # Snapshot #2
src_mask = (src != src_vocab.pad_index).unsqueeze(1)
trg_mask = (trg != trg_vocab.pad_index).unsqueeze(1)  # as joeynmt.batch.Batch makes it: from the shifted target
src_length = src_mask.sum(-1).squeeze(1)
with torch.no_grad():
    batch_loss, log_probs, _, n_correct = model(return_type="loss", src=src, trg=trg, trg_input=trg_input,
                                                src_mask=src_mask, trg_mask=trg_mask, src_length=src_length)
print("log_probs", tuple(log_probs.shape), "loss", round(batch_loss.item(), 4), "correct", n_correct.item())
