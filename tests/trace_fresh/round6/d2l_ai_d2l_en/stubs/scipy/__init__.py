"""Ours: scipy is not installed; d2l/torch.py imports `scipy.spatial.distance_matrix` for a Gaussian-process plot."""
