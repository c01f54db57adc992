"""Our stub (not upstream): pandas is not installed; d2l/torch.py and the notebook import it at the top but a forward pass
never calls it."""
