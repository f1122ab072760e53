"""Errors that mean the user has something to fix; the CLI prints them in one line."""


class UserError(Exception):
    """A problem with the user's input or environment, with the fix in the message."""
