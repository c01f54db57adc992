"""Stub (ours, not upstream): the environment has no Hugging Face transformers. fastformer.py only needs a config
class that keeps its keyword arguments as attributes, a model base class that is an `nn.Module` keeping its config,
and the two registries it registers its config with (no-ops here)."""
import torch.nn as nn


class PretrainedConfig:
    def __init__(self, **kwargs):
        for name, value in kwargs.items():
            setattr(self, name, value)


class PreTrainedModel(nn.Module):
    config_class = None

    def __init__(self, config, *args, **kwargs):
        super().__init__()
        self.config = config


class AutoConfig:
    @staticmethod
    def register(*args, **kwargs):
        pass


class AutoModelForCausalLM:
    @staticmethod
    def register(*args, **kwargs):
        pass
