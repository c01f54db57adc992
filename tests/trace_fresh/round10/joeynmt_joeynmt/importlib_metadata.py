"""A stand-in for importlib_metadata (ours, not upstream; the project's environment has no importlib_metadata):
joeynmt/helpers.py imports it at the top and only calls `version` in `check_version`, which this forward pass never
runs; `version` answers from the standard library's importlib.metadata."""
from importlib.metadata import PackageNotFoundError, version  # noqa: F401
