"""OUR stub, not upstream: upstream's `labml_nn/transformers/__init__.py` imports its `configs` (the `labml.configs`
experiment machinery) and the Transformer-XL module; the driver needs only `models`, `mha`, `feed_forward`,
`positional_encoding` and `utils` of this package, which are upstream's files."""
