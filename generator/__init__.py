"""The report generator (python -m generator, the transformer-trace MkDocs plugin, the serve process)."""

import os

# PyTorch's OpenMP threads wait for work passively (sleep) rather than spinning. On a shared machine, spinning threads
# compete with the other processes for the cores: the GPT's forward and generation passes (hundreds of small operations)
# took ten times longer under load. Same work split, same results; read when PyTorch loads, so only if it has not yet.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
