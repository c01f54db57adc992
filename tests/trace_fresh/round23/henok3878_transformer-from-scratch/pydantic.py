"""Ours: a stub of pydantic's `BaseModel` (pydantic is not installed here), enough for upstream's `transformer/config.py`
to define its config classes: keyword arguments become attributes, class defaults kept. No validation."""


class BaseModel:
    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, value)
