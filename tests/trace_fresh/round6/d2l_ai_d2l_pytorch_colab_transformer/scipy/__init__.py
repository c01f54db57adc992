"""Our stub (not upstream): scipy is not installed; d2l/torch.py imports scipy.spatial at the top."""
