"""The installed distribution's version: what `transformer-trace --version` prints, and every report's run stamp."""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "transformer-trace"


def package_version() -> str:
    """From the installed distribution's metadata (an editable install in a clone has it too)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"
