"""Errors that are the user's to fix: reported in one line, exit code 2, no traceback."""


class UserError(Exception):
    """A problem with the input or the environment, phrased as what to do about it."""
