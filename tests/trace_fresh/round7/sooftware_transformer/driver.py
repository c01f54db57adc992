"""Driver (ours, not upstream): sooftware/transformer's encoder-decoder (transformer.py: embeddings scaled by sqrt(C)
plus the paper's sinusoid table, a post-norm encoder (AddNorm wrappers), a pre-norm decoder (LayerNorm before each
sublayer, plain residual sums, no final LayerNorm), heads folded into the batch axis head-major for torch.bmm, boolean
masks filled with -inf, a ReLU feed-forward in an nn.Sequential, log-softmax outputs) at a tiny size (width 32, 4 heads,
2 encoder and 2 decoder layers, feed-forward 64, vocabularies of 40 and 48), random weights (seed 0), a batch of two
source sentences of lengths 8 and 6 (padded with ID 0) and two targets that start with <sos> (1) and hold one <eos> (2)
each, as the model's forward expects (it drops the <eos> before decoding), one teacher-forced forward pass in eval
mode. No stubs.
Trace: python -m transformer_trace trace driver.py"""
import torch

from transformer import Transformer

torch.manual_seed(0)
model = Transformer(num_input_embeddings=40, num_output_embeddings=48, d_model=32, d_ff=64, num_heads=4,
                    num_encoder_layers=2, num_decoder_layers=2, dropout_p=0.1, pad_id=0).eval()
inputs = torch.tensor([[5, 12, 7, 30, 3, 9, 21, 4], [9, 4, 22, 17, 8, 26, 0, 0]])  # Snapshot #1
input_lengths = torch.tensor([8, 6])
targets = torch.tensor([[1, 14, 6, 40, 11, 2, 0, 0], [1, 33, 19, 8, 27, 45, 9, 2]])  # Snapshot #2
target_lengths = torch.tensor([5, 7])
with torch.no_grad():
    log_probs = model(inputs, input_lengths, targets, target_lengths)
print("log-probabilities", tuple(log_probs.shape), "argmax", log_probs.argmax(-1)[0].tolist())
