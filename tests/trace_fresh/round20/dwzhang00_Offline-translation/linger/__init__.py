"""Stub (ours) for LISTENAI's `linger` quantisation toolkit (not installable here): the one call the model makes,
`linger.quant_tensor(module, tensor, name=..., mode=...)`, returns the tensor as it is (floating-point training)."""


class QuantMode:
    QValue = "QValue"


def quant_tensor(module, tensor, name=None, mode=None):
    return tensor
