# Stub (ours, not upstream): an empty package so that litgpt/model.py's `from litgpt.scripts.convert_hf_checkpoint
# import qkv_reassemble` resolves to our stub below.
