"""A stand-in for Hugging Face accelerate (ours, not upstream; the project's environment has none): upstream's
`src/models/model.py` imports `init_empty_weights` and `load_checkpoint_and_dispatch` for loading released Gemma 2
weights, which the driver (random weights) never calls."""


def init_empty_weights(*args, **kwargs):
    raise NotImplementedError("accelerate is stubbed: loading released weights is not part of the driver")


def load_checkpoint_and_dispatch(*args, **kwargs):
    raise NotImplementedError("accelerate is stubbed: loading released weights is not part of the driver")
