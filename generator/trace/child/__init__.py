"""The child room: the modules that run inside the traced script's own interpreter (``python child/bootstrap.py
SPEC.json``), never in the generator's process.

bootstrap.py is started by its file path and loads the others beside it by path (``_beside``): the script's own
`models`, `generator` or `utils` packages must import as they would under ``python SCRIPT.py``, so nothing of
transformer_trace is importable there. A module here may import only the standard library and protocol.py (the one
module both processes share: the generator imports it as ``transformer_trace.trace.child.protocol``); torch and NumPy
are taken from ``sys.modules`` once the script has imported them, never imported at the top of a module
(tests/test_architecture.py holds this). This file is never run in the child, and imports nothing.
"""
