"""The MkDocs site made of the docs folder, and the faces that call a build for it: the MkDocs plugin and `serve`.
What they write through (staging, the build lock, what mkdocs.yml declares) is generator/docs_folder/, below them.

- ``plugin``: the `transformer-trace` MkDocs plugin (its options' schema: docs_folder.plugin_options).
- ``warm_site``: MkDocs loaded once in a long-lived process, rebuilding only the pages that changed.
- ``server``: `python -m transformer_trace serve`, the warm process; ``http_handler`` answers its requests, ``api``
turns them into builds, ``forms`` derives each report's form from its options, ``events`` streams progress and reloads.

Nothing here imports transformer_trace.cli: the command line imports this package, never the other way round.
"""
