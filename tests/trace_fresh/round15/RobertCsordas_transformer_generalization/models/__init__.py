# Stub (ours, not upstream): upstream's models/__init__.py is this same one import; kept ours so that the folder holds
# only the upstream files the driver needs.
from .transformer_enc_dec import TransformerEncDecModel
