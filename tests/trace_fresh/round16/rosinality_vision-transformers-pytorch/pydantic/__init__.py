"""Ours: a stub of pydantic (not installed here); twins.py reads StrictInt and StrictFloat only as annotations."""
StrictInt = int
StrictFloat = float
