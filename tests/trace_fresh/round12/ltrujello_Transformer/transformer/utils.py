"""Our stub, not upstream: upstream's src/transformer/utils.py reads the device from a .env file through python-dotenv
(not installed here) and sets up logging for training; model.py and attention.py import only `configure_device` from
it, which here gives the CPU as upstream's does when no DEVICE is set."""
import torch


def configure_device():
    return torch.device("cpu")
