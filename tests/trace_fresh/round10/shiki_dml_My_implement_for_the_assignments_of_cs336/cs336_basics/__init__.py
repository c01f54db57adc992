"""cs336_basics package marker (ours, not upstream): upstream's __init__.py reads the installed package's version
(`importlib.metadata.version("cs336_basics")`), which raises where the folder is not pip-installed, as here."""
