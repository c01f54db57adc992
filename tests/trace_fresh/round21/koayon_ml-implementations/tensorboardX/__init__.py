"""Stub (ours, not upstream): gpt/model.py imports a SummaryWriter only its commented-out lines use."""


class SummaryWriter:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("tensorboardX is stubbed")
