# OURS, a stub: upstream's whisper/__init__.py imports the audio, tokenizer and transcription modules (ffmpeg,
# tiktoken, numba, downloads), none of which the model's forward pass needs; this empty package lets
# `from whisper.model import ...` import model.py alone.
