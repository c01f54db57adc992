"""Ours, a stub: upstream's `src/vit_from_scratch/__init__.py` imports the whole training stack (data loaders,
checkpoints, DINO, MAE, plots: matplotlib, PyYAML, tqdm) at package import; the model needs none of it, so this
package init imports nothing and the driver imports `vit_from_scratch.model` and `vit_from_scratch.config` directly."""
