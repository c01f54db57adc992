"""Stub (ours, not upstream): LexiMind's src/models/__init__.py imports every module of the package, among them the
task heads and the multi-task wrapper, which the driver does not use; this empty package lets the driver import the
encoder and the decoder modules, copied as they are, on their own."""
