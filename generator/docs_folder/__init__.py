"""The docs folder the generator writes, below every face that calls a build (the command line, the MkDocs plugin,
`serve`): the build, the trace, the class page and the PDF export write through it, and it imports none of them.

- ``location``: which mkdocs.yml and docs folder a command works on, as `mkdocs` finds them.
- ``staging``: generated output swapped into docs/ only when complete; the manifest of what the generator wrote, the
  user's files carried over. ``build_lock``: one build at a time. ``interrupts``: Ctrl-C held while the swap runs.
- ``configured``: the reports mkdocs.yml declares (the plugin's options, their schema in ``plugin_options``), and
  whether docs/ is up to date with them (torch-free).

Nothing here imports transformer_trace.site (tests/test_architecture.py holds it).
"""
