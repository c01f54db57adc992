# Ours: a stub of rosinality's tensorfn package (not installed here); only tensorfn.config.config_model is read.
