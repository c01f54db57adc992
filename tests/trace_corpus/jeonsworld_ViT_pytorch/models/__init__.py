"""Ours, not upstream (upstream's models/ has no __init__.py): makes this folder a regular package, so that
`from models.modeling import ...` and modeling.py's `from .modeling_resnet import ResNetV2` find these files and not
another regular package named `models` further along sys.path (this project's own models/ is one)."""
