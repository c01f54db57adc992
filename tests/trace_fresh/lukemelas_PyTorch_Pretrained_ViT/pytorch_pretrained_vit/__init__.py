__version__ = "0.0.7"

from .model import ViT
from .configs import *
from .utils import load_pretrained_weights
