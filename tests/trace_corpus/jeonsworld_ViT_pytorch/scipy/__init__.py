"""A stand-in for scipy (ours, not upstream; the project's environment has no scipy): models/modeling.py imports
`from scipy import ndimage` at import time, and uses ndimage.zoom only to resize pretrained position embeddings in
`load_from`, which the driver (random weights) never calls."""
