from .util import SCALE  # noqa: F401
