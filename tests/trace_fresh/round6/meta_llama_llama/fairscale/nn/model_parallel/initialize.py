"""Our stub of fairscale.nn.model_parallel.initialize: one process, so the model-parallel world has size 1."""


def get_model_parallel_world_size() -> int:
    return 1
