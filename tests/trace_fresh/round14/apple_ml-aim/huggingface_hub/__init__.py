"""Ours, not upstream: a stand-in for huggingface_hub (not in the project's environment). apple/ml-aim imports
`PyTorchModelHubMixin` (a base class for loading checkpoints from the Hub) and `hf_hub_download`; the traced forward
pass uses neither, so the mixin is an empty class and the download raises."""


class PyTorchModelHubMixin:
    pass


def hf_hub_download(*args, **kwargs):
    raise RuntimeError("huggingface_hub is not available here (ours: a stand-in)")
