"""Ours (a stub): upstream's src/__init__.py imports its training machinery (attention rollout, YAML configs, the train
session, wandb helpers), none of which the model needs; the model's own package src/models/ is upstream's."""
