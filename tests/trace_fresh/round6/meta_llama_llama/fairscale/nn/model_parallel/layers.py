"""Our stub of fairscale.nn.model_parallel.layers for one process: with world size 1 fairscale's column- and
row-parallel Linears are nn.Linear and its ParallelEmbedding is nn.Embedding (the parallel-only arguments are accepted
and ignored; the weights keep PyTorch's default initialisation)."""
from torch import nn


class ColumnParallelLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, gather_output=True, init_method=None, **kwargs):
        super().__init__(in_features, out_features, bias=bias)


class RowParallelLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, input_is_parallel=False, init_method=None, **kwargs):
        super().__init__(in_features, out_features, bias=bias)


class ParallelEmbedding(nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim, init_method=None, **kwargs):
        super().__init__(num_embeddings, embedding_dim)
