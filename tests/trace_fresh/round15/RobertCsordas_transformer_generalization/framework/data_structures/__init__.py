# Stub (ours, not upstream): upstream's framework/data_structures/__init__.py also imports its vocabularies; the model
# needs only DotDict (upstream's dotdict.py, beside this stub).
from .dotdict import DotDict
