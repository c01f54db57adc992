"""Stub (ours, not upstream): helpers.py imports pandas for a parameter-count table the driver never builds."""


class DataFrame:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("pandas is stubbed: the driver builds no table")
