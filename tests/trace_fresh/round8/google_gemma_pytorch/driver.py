"""Driver (ours, not upstream): google/gemma_pytorch's Gemma (gemma/model.py, Gemma 1 architecture: token embeddings
scaled by sqrt(C), pre-norm decoder layers with RMSNorm (gain 1 + w), one fused qkv projection with grouped-query
attention (4 query heads sharing 2 key/value heads, repeat_interleave), rotary positions applied as complex numbers,
the queries scaled in place before Q.K^T, an additive mask of -2.38e38 above the diagonal, a key/value cache written
in the pass, a GeGLU MLP, a final RMSNorm, logits of the last position from the token embedding) at a tiny size
(width 32, 4 heads of 8, 2 layers, MLP 64, a vocabulary of 64), weights drawn from a normal distribution (seed 0;
upstream creates them empty and loads a checkpoint), a batch of two prompts of 8 token IDs, one prefill forward pass
(the cache as long as the prompt, the mask built as upstream's generate builds it), the greedy next token.
Stub: gemma/tokenizer.py (sentencepiece is not installed and no tokenizer file is needed for token IDs).
Trace: python -m transformer_trace trace driver.py"""
import torch

from gemma import config as gemma_config
from gemma.model import GemmaForCausalLM

torch.manual_seed(0)
config = gemma_config.GemmaConfig(vocab_size=64, max_position_embeddings=8, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
                                  intermediate_size=64, head_dim=8, dtype="float32", tokenizer=None)
model = GemmaForCausalLM(config).eval()
with torch.no_grad():
    for parameter in model.parameters():
        parameter.normal_(0.0, 0.1)

tokens = torch.tensor([[2, 17, 9, 42, 3, 28, 11, 4], [2, 33, 20, 14, 6, 49, 5, 30]])  # BREAKPOINT G01
batch_size, prompt_len = tokens.shape
max_seq_len = prompt_len
kv_caches = [(torch.zeros(batch_size, max_seq_len, config.num_key_value_heads, config.head_dim),
              torch.zeros(batch_size, max_seq_len, config.num_key_value_heads, config.head_dim))
             for _ in range(config.num_hidden_layers)]
mask_tensor = torch.full((1, 1, max_seq_len, max_seq_len), -2.3819763e38).triu(diagonal=1)
input_positions = torch.arange(0, prompt_len)
mask = mask_tensor.index_select(2, input_positions)  # BREAKPOINT G12
with torch.no_grad():
    next_tokens, logits = model(input_token_ids=tokens, input_positions=input_positions, kv_write_indices=None,
                                kv_caches=kv_caches, mask=mask, output_positions=torch.tensor([prompt_len - 1]),
                                temperatures=None, top_ps=torch.tensor([1.0, 1.0]), top_ks=torch.tensor([64, 64]))
print("logits", tuple(logits.shape), "next tokens", next_tokens.tolist())
