"""Driver (ours, not upstream): AviSoori1x/makeMoE's `makeMoE.py`, a character-level GPT whose MLP is a **sparse
mixture of experts**: a noisy top-k router (`topkroute_linear` logits plus Gaussian noise scaled by the softplus of
`noise_linear`, the top k kept, a softmax over them) picks 2 of the experts for each token, each expert a
Linear–ReLU–Linear `nn.Sequential`, their outputs weighted by the router's probabilities and summed with `index_add_`
(an expert capacity drops the tokens past it); attention is one `Head` module per head (the scores scaled by
`C**-0.5` with `C` the model width), pre-norm blocks, learned positions, an untied head with a bias.

`makeMoE.py` reads its sizes from module globals and opens `input.txt` (tinyshakespeare, upstream's) when imported;
its training runs only under `if __name__ == "__main__"`. This driver imports it, sets tiny sizes on the module
before the model is built (width 32, 4 heads of 8, 2 blocks, 4 experts, top 2, context 8), initialises it as
upstream's `main()` does (`kaiming_init_weights`), and runs one forward pass in eval mode without gradients on two
sequences of 8 characters of the text. Seed 1337 is upstream's.
Trace: python -m transformer_trace trace driver.py"""
import os

import torch

os.chdir(os.path.dirname(os.path.abspath(__file__)))  # makeMoE.py opens 'input.txt' relative to the working folder
import makeMoE  # noqa: E402

makeMoE.n_embed, makeMoE.n_head, makeMoE.n_layer, makeMoE.block_size = 32, 4, 2, 8
makeMoE.num_experts, makeMoE.top_k = 4, 2
torch.manual_seed(1337)
model = makeMoE.SparseMoELanguageModel()
model.apply(makeMoE.kaiming_init_weights)
model.eval()
idx = makeMoE.train_data[:16].view(2, 8)
with torch.no_grad():
    logits, _ = model(idx)
print("logits", tuple(logits.shape), "next characters", makeMoE.decode(logits[:, -1].argmax(-1).tolist()))
