"""The reading room: modules that run in the generator's process and turn what the child room wrote into the
results folder (child/protocol.py: its events and values, read only by capture.py) into a capture, its checks, the
traced run and its pages.

A module here may import the generator's own modules, torch and NumPy, and of the child room only its protocol
(``transformer_trace.trace.child.protocol``): the child's other modules run in the script's interpreter, never here.
The command (transformer_trace.trace, its top-level modules) calls into this room; this room imports from the
command only what both need (markers, the child process, the notebook's cell map).
"""
