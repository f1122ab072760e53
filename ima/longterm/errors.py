"""What can go wrong with long-term memory, as exception types callers can tell apart.

`MemoryUnavailable` is the one the runner catches: the run goes on without long-term
memory and says so. The others are the user's to fix (they are `UserError`s, so the CLI
prints them in one line) or a refused out-of-scope record.
"""

from __future__ import annotations

from ima.core.errors import UserError


class LongTermError(Exception):
    """Base class of every long-term memory error."""


class MemoryUnavailable(LongTermError):
    """The store cannot be used (bad path, locked, corrupted, unreadable record)."""


class WriteConflict(MemoryUnavailable):
    """A conditional write kept losing to other writers; nothing was overwritten."""


class ScopeViolation(LongTermError):
    """A record read back was not in the caller's scope; it is refused, never returned."""


class InvalidToken(UserError, LongTermError):
    """A principal, role or item id is not a safe token."""


class Refused(UserError, LongTermError):
    """A write was refused by the screen (personal data, secrets, instruction-like text)."""


class UnknownItem(UserError, LongTermError):
    """No item with that id exists in the caller's memory."""
