"""OUR stub, not upstream: upstream's `labml_nn/transformers/__init__.py` imports its `configs` (the `labml.configs`
experiment machinery) and the Transformer-XL module; `vit/__init__.py` imports `TransformerLayer` from this package,
so the stub gives that one name from upstream's `models.py`, as upstream's own `__init__` does. (Rebuilt when the
round was restored: the stubs of this folder had not been committed; the GPT folder beside it holds the same
`labml` stubs.)"""
from .models import TransformerLayer  # noqa: F401
