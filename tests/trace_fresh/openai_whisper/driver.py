"""Driver (ours, not upstream): OpenAI Whisper's model at a tiny size (8 mel bins, 16 frames -> an audio context of
8, width 32, 4 heads, 2 + 2 layers, 50 tokens, a text context of 6), random weights (seed 0), a batch of two random
mel spectrograms and two token prefixes of 6, one forward pass in eval mode through upstream's own `disable_sdpa()`
(the attention path that computes the scores and the weights as tensors, as upstream uses it to read attention).
Upstream allocates the decoder's position table with torch.empty (a checkpoint fills it): the driver fills it with
small random values. Trace: python -m transformer_trace trace driver.py"""
import torch

from whisper.model import ModelDimensions, Whisper, disable_sdpa

torch.manual_seed(0)
dims = ModelDimensions(n_mels=8, n_audio_ctx=8, n_audio_state=32, n_audio_head=4, n_audio_layer=2, n_vocab=50,
                       n_text_ctx=6, n_text_state=32, n_text_head=4, n_text_layer=2)
model = Whisper(dims).eval()
with torch.no_grad():
    model.decoder.positional_embedding.normal_(std=0.02)
mel = torch.randn(2, 8, 16)
tokens = torch.tensor([[1, 7, 12, 3, 44, 9], [1, 21, 5, 5, 30, 2]])  # Snapshot #2
with torch.no_grad(), disable_sdpa():
    logits = model(mel, tokens)
print("predicted tokens", logits.argmax(-1).tolist())
