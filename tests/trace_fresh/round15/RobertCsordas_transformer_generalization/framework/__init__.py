# Stub (ours, not upstream): upstream's framework/__init__.py imports its whole training framework (tensorboard,
# visualisation, loaders); the model needs only these two modules, whose upstream files sit beside this stub.
from . import data_structures
from . import layers
