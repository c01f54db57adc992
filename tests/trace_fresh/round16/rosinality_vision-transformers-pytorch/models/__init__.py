# Ours, not upstream: upstream's models/__init__.py imports every model of the repository (NFNet, HaloNet, ...); the
# driver needs only models/twins.py and models/layer.py, so this package file imports nothing.
