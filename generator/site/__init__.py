"""The site machinery: the docs folder the generator writes, and the MkDocs site made of it.

- ``staging``: generated output swapped into docs/ only when complete; the manifest of what the generator wrote,
  the build lock, the user's files carried over.
- ``configured``: the reports mkdocs.yml declares, and whether docs/ is up to date with them (torch-free).
- ``plugin``: the `transformer-trace` MkDocs plugin (its options: ``plugin_options``).
- ``warm_site``: MkDocs loaded once in a long-lived process, rebuilding only the pages that changed.
- ``server``: `python -m transformer_trace serve`, the warm process; ``http_handler`` answers its requests, ``api``
turns them into builds, ``forms`` derives each report's form from its options, ``events`` streams progress and reloads.

Nothing here imports transformer_trace.cli: the command line imports this package, never the other way round.
"""
