"""Ours: one forward pass of tysam-code/hlb-gpt's `SpeedyLangNet` (`main.py`, release 0.4.1), a speed-tuned GPT
trainer's model: **no position embeddings**; blocks of one `LatentAttentionBlock` each, whose single LayerNorm
(`nn.LayerNorm(C, bias=False)`) feeds **one fused `F.linear(x, self.expand)`** (a bare `nn.Parameter`, no Linear
module) split into query, key (each of width C/8), `linear` and `pre_gelu` (each 2C); a **GeGLU** `linear *
gelu(pre_gelu)` whose second half is the attention's **values** and whose first half stays local; **one head, no heads
axis** (q, k of width C/8, v of width C); `F.scaled_dot_product_attention` with an **additive mask: causal -inf plus a
learned linear position bias** `softplus(position_bias_mult) * (j - i)` (ALiBi-like, one slope per block); the local
half and the attention output concatenated into **one fused output projection** `F.linear(cat(...), self.project)`;
one residual sum per block; a final bias-free LayerNorm; an untied output Linear. The whole model is cast to
**bfloat16** by upstream's `make_net` and runs so (as upstream's inference demo runs it).
The file is upstream's whole training script: at import it tokenises or loads `data.pt`, builds its constants on
'cuda', defines the model, and ends in its inference demo's module-level `net = torch.load('model.pt')`. The driver
imports it in a temporary folder holding a tiny `data.pt` of ours, under a torch-function mode that puts every tensor
upstream places on 'cuda' on the CPU (no GPU here), catches the FileNotFoundError of `model.pt` and takes the classes
from the module's globals (the frame it stopped in); it then shrinks upstream's `hyp` (read by `__init__` and by
`forward`'s loop over blocks) and builds the net with upstream's `make_net()`. `tiktoken.py` beside it is our stub
(tiktoken is not installed; nothing the model runs calls it).
Untrained, eval mode, seed 0. Tiny sizes: vocabulary 96, width 64 (q, k 8; GeGLU 128), 2 blocks; two sequences of 8
tokens.
Trace: python -m transformer_trace trace driver.py"""
import os
import sys
import tempfile

import torch
from torch.overrides import TorchFunctionMode


class CudaOnCpu(TorchFunctionMode):
    """Every device 'cuda' upstream names at import (its constants, `position_bias_mult`) is the CPU."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        def cpu(value):
            if isinstance(value, (str, torch.device)) and str(value).startswith("cuda"):
                return "cpu"
            return value
        return func(*[cpu(a) for a in args], **{k: cpu(v) for k, v in (kwargs or {}).items()})


here = os.getcwd()
data_dir = tempfile.mkdtemp(prefix="hlb_gpt_")
os.chdir(data_dir)  # upstream loads ./data.pt at import (else it downloads WikiText-103): a tiny one of ours
torch.save({"train": torch.arange(64, dtype=torch.int), "eval": torch.arange(64, dtype=torch.int)}, "data.pt")
try:
    with CudaOnCpu():
        import main  # noqa: F401  (stops at upstream's module-level `net = torch.load('model.pt')`)
except FileNotFoundError as stop:
    frame = stop.__traceback__
    while frame.tb_next is not None and not frame.tb_frame.f_code.co_filename.endswith("main.py"):
        frame = frame.tb_next
    upstream = frame.tb_frame.f_globals
else:
    upstream = vars(sys.modules["main"])
finally:
    os.chdir(here)
hyp = upstream["hyp"]
hyp["net"].update(residual_depth=64, num_blocks=2)
hyp["misc"].update(num_tokens=96, device="cpu")

torch.manual_seed(0)
with CudaOnCpu():
    model = upstream["make_net"]().eval()
ids = torch.randint(0, 96, (2, 8))  # BREAKPOINT G01
with torch.no_grad():
    logits = model(ids)
print("logits", tuple(logits.shape), logits.dtype, [round(v, 5) for v in logits[0, -1, :4].float().tolist()])
