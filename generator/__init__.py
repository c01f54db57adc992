"""The report generator (python -m transformer_trace, the transformer-trace MkDocs plugin, the serve process)."""

import os

# PyTorch's OpenMP threads wait for work passively (sleep) rather than spinning. On a shared machine, spinning threads
# compete with the other processes for the cores: the GPT's forward and generation passes (hundreds of small operations)
# took ten times longer under load. Same work split, same results; read when PyTorch loads, so only if it has not yet.
# What is set here is taken out again for a traced script's own interpreter (generator/trace/reading/capture.py).
ENVIRONMENT_ADDED = {} if "OMP_WAIT_POLICY" in os.environ else {"OMP_WAIT_POLICY": "PASSIVE"}
os.environ.update(ENVIRONMENT_ADDED)
