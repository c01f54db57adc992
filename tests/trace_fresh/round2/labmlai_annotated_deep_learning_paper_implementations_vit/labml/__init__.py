"""OUR stub, not upstream: the `labml` package (experiment tracking) is not installed here; mha.py imports only
`labml.tracker`, whose `debug` it calls to log the attention weights."""
