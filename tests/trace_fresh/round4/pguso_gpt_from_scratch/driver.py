"""Driver (ours, not upstream): pguso/gpt-from-scratch's GPTModel (src/model/) at a tiny size (width 32, 4 heads,
2 layers, context 16, a vocabulary of 50), random weights (seed 0), a batch of two prompts of 8 token IDs, one forward
pass in eval mode as upstream's examples/generate_text.py runs it (no_grad, logits of every position).
Trace: python -m transformer_trace trace driver.py"""
import torch

from src.config import ModelConfig
from src.model.gpt import GPTModel

torch.manual_seed(0)
config = ModelConfig(vocab_size=50, context_length=16, embedding_dimension=32, number_of_heads=4, number_of_layers=2,
                     dropout_rate=0.1, use_attention_bias=False)
model = GPTModel(config).eval()
input_ids = torch.tensor([[3, 17, 9, 42, 5, 28, 11, 4], [8, 1, 33, 20, 14, 6, 49, 2]])  # BREAKPOINT G01
with torch.no_grad():
    logits = model(input_ids)
print("next tokens", logits[:, -1].argmax(-1).tolist())
