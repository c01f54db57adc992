"""Ours, a stub: the upstream model imports omegaconf.DictConfig for a type annotation only; the driver passes a
namespace with the same attributes."""

DictConfig = object
