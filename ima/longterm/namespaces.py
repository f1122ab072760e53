"""Namespaces are built here and nowhere else, from a validated principal, a fixed kind and
a validated scope token, so a caller can never name another principal's memory.

Layout: (ROOT, principal, kind, scope). A token is one strict label: no separators, no
dots (so no ".."), no NUL, never empty; LangGraph stores also forbid "." in labels.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
from dataclasses import dataclass
from typing import Any, Literal

from ima.longterm.errors import InvalidToken, ScopeViolation

ROOT = "ima_longterm"
Kind = Literal["private", "shared", "audit"]
KINDS: tuple[Kind, ...] = ("private", "shared", "audit")
SHARED_SCOPE = "team"  # the one scope of the shared kind
AUDIT_SCOPE = "log"  # the one scope of the audit kind

# fullmatch only: `$` would accept a trailing newline.
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def safe_token(value: object, what: str = "token") -> str:
    """`value` if it is one safe namespace label, else InvalidToken."""
    if not isinstance(value, str) or not _TOKEN.fullmatch(value):
        shown = repr(value)[:40]
        raise InvalidToken(
            f"invalid {what} {shown}: use 1-64 letters, digits, '-' or '_', starting with a "
            "letter or digit"
        )
    return value


def default_principal() -> str:
    """IMA_PRINCIPAL, else the OS user; a user name that is not a safe token is hashed
    (not rewritten character by character, which could make two users collide)."""
    configured = os.environ.get("IMA_PRINCIPAL", "")
    if configured:  # validated as is: " B" or "B\n" is not quietly turned into "B"
        return safe_token(configured, "principal (IMA_PRINCIPAL)")
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        user = f"uid{os.getuid()}" if hasattr(os, "getuid") else "user"
    if _TOKEN.fullmatch(user):
        return user
    return "u-" + hashlib.sha256(user.encode()).hexdigest()[:16]


def resolve_principal(configured: str | None) -> str:
    """The run's principal: the configured one (validated), else `default_principal()`."""
    if configured:
        return safe_token(configured, "principal (IMA_PRINCIPAL or `principal` in ima.toml)")
    return default_principal()


@dataclass(frozen=True)
class Scope:
    """One memory scope of a principal: a role's private memory, the team's, or the audit log."""

    kind: Kind
    token: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidToken(f"unknown memory kind {self.kind!r}: use {', '.join(KINDS)}")
        safe_token(self.token, "scope")
        fixed = {"shared": SHARED_SCOPE, "audit": AUDIT_SCOPE}.get(self.kind)
        if fixed and self.token != fixed:  # one shared scope and one audit log per principal
            raise InvalidToken(f"the {self.kind} memory has the one scope {fixed!r}")

    @property
    def label(self) -> str:
        """How people see it: the role id, `shared` or `audit`."""
        return self.token if self.kind == "private" else self.kind


def private(role: str) -> Scope:
    return Scope("private", safe_token(role, "role"))


SHARED = Scope("shared", SHARED_SCOPE)
AUDIT = Scope("audit", AUDIT_SCOPE)


def namespace(principal: str, scope: Scope) -> tuple[str, ...]:
    return (ROOT, safe_token(principal, "principal"), scope.kind, scope.token)


def check_in_scope(
    principal: str, scope: Scope, found_namespace: tuple[str, ...], value: Any
) -> dict[str, Any]:
    """The record's value if both where it was found and what it says about itself match
    the expected scope; anything else is refused (defence in depth against a store, a
    migration or a hand edit putting a record where it does not belong)."""
    expected = namespace(principal, scope)
    if tuple(found_namespace) != expected:
        raise ScopeViolation("a long-term record outside the caller's scope was refused")
    if not isinstance(value, dict) or (
        value.get("principal"),
        value.get("kind"),
        value.get("scope"),
    ) != (principal, scope.kind, scope.token):
        raise ScopeViolation("a long-term record labelled for another scope was refused")
    return value
