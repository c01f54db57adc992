"""A stand-in for tqdm (ours, not upstream; the project's environment has no tqdm): vit.py imports `tqdm` at its top
for the progress bars of its own fit/test loops, which one forward pass never runs. Nothing here is called."""


class tqdm:  # noqa: N801 (tqdm's own name)
    def __init__(self, *args, **kwargs):
        raise RuntimeError("tqdm stand-in: progress bars are not part of one forward pass")
