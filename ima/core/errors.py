"""Errors that mean the user has something to fix; the CLI prints them in one line."""


class UserError(ValueError):
    """A problem with the user's input or environment, with the fix in the message.

    A ValueError, so the LangGraph server shows its message instead of a generic error.
    """
