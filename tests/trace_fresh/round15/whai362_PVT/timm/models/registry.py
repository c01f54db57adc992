"""Ours, a stub (see ../__init__.py): register_model leaves the factory function as it is."""


def register_model(fn):
    return fn
