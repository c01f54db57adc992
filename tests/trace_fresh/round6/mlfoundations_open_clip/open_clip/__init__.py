"""Ours: an empty package file in place of open_clip's own __init__.py, which imports the whole library (tokenizers,
pretrained weights, hf_hub); the driver needs only transformer.py and the three modules it imports."""
