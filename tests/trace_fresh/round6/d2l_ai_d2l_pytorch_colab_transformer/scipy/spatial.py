"""Our stub (not upstream): d2l/torch.py imports distance_matrix for its object-detection helpers only."""


def distance_matrix(*args, **kwargs):
    raise NotImplementedError("scipy is not installed: distance_matrix is stubbed")
