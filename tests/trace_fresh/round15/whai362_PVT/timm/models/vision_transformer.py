"""Ours, a stub (see ../__init__.py): _cfg, the default-config dict the factory functions attach (unused here)."""


def _cfg(url='', **kwargs):
    return {'url': url, **kwargs}
