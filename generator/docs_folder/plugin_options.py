"""The `transformer-trace` plugin's options in mkdocs.yml (their schema), apart from the plugin: reading them
(configured.py) needs MkDocs' configuration classes only, not the plugin's navigation and pages."""

from __future__ import annotations

from mkdocs.config import config_options as c
from mkdocs.config.base import Config


class TransformerTraceConfig(Config):
    reports = c.Type(dict, default={})  # report key -> its options (the CLI's option names with underscores)
    generate = c.Type(bool, default=True)  # false: build with the reports docs/ holds, never run a model
