# Stub (ours, not upstream): upstream's module converts Hugging Face checkpoints (and imports lightning, safetensors);
# litgpt/model.py uses its qkv_reassemble only when it loads an old state dict, which this trace never does.


def qkv_reassemble(param, config):
    raise NotImplementedError("stub: checkpoint conversion is not part of this trace")
