"""Ours: a stub of pydantic (not installed here). nai_t5's T5Config is a BaseModel built with keyword arguments;
its field validator and serializer convert dtypes given as strings (the driver gives torch dtypes, left as they are)."""


class BaseModel:
    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, value)


def field_validator(*_fields, **_options):
    return lambda function: function


def field_serializer(*_fields, **_options):
    return lambda function: function
