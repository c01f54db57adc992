# Stub (ours, not upstream): upstream's framework/layers/__init__.py also imports its label-smoothing loss; the model
# needs only the positional encoding (upstream's positional_encoding.py, beside this stub).
from .positional_encoding import PositionalEncoding, sinusoidal_pos_embedding
