# Stub (ours, not upstream): upstream's litgpt/__init__.py imports the whole API (LLM, the tokenizer, the prompt styles,
# lightning utilities) that this trace does not use; the model needs only litgpt.config and litgpt.model.
